"""CLI command functions that live with their stage; hourly.cli registers them with ``app.command()``."""
