"""CLI commands kept in their own modules; hourly/cli.py registers them with ``app.command()``."""
