"""``hourly watch``: every new build measured on arrival, suspected steps confirmed by measuring
again, confirmed regressions hunted (docs/watch.md)."""
