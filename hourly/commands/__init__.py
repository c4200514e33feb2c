"""Every command of hourly, one module each, each a thin function: read its options, build the
settings (hourly.measure.settings), call the core, render. hourly/cli.py assembles them into the app."""
