"""CLI commands that live in their own modules; hourly.cli registers them."""
