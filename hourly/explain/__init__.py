"""After the culprit: what it changed in the compiled program (``run``: HLO dumps of both states,
diffed by :mod:`hourly.analysis.hlo_diff`; a repro), the workaround sweep and the revert check;
``plan`` holds the pure part and the stored record."""
