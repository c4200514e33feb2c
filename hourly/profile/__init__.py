"""After the culprit: trace the last-good and first-bad states of each regression
(``run``), run a benchmark under the tracer (``capture``), and read and compare captures
(``compare``: perfetto traces, memory profiles).
"""
