"""CLI command functions that hourly/cli.py registers (one module per feature)."""
