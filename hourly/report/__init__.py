"""``hourly report``'s facts, gathered from what every level stored (``gather``: the store read, the
steps detected, the commits listed, the environment captured when no scan recorded it) into a
``data.ReportData`` that hourly/render/report.py turns into markdown and plots alone."""
