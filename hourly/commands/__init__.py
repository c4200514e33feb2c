"""CLI command functions that ``hourly.cli`` registers with ``app.command()``."""
