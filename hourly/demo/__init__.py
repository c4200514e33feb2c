"""``hourly demo``: stand-in repositories with planted changes (repos.py) and the hunt on them (hunt.py)."""
