"""Pure analysis: step detection (``detect``), the bisection's maths (``bisection``), a
history's timeline lookup (``timeline``), detection applied to scan points (``steps``) and the
labelled series it reads (``series``). No I/O, no process, no adapter: these modules import only
the records (``hourly.model``, ``hourly.errors``, ``hourly.text.plurals``, ``hourly.text.timeparse``), the
standard library, numpy and scipy, so tests drive them with plain lists.
"""
