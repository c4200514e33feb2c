from hourly.cli import entry

entry()
