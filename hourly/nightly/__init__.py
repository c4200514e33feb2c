"""The daily level: the benchmark in one nightly container per date (``plan``: settings,
dates, GPU slots, the stored report; ``run``: the containers; ``image``: ``hourly container``,
the pinned image with hourly inside).
"""
