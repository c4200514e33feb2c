"""The commit level: the search over the merged first-parent timeline of both repositories.

``search`` (the ``Bisector``: the wiring and the lab; ``run_bisect``), ``windows`` (which windows,
in which mode), ``drive`` (one window from its ends to its answer, over a ``Lab``; its searches in
``metric_drive``/``step_session`` and ``chain_drive``), ``records`` (``Window``, ``Probe``,
``BisectRequest``), ``events`` (``BisectHandler``), ``answer`` (the answer built from a window's
rows, the ``git bisect`` log), ``manual`` (the person behind ``--manual``). Every verdict is a
judge's (hourly.analysis.judges); the answer is an ``hourly.answers.Answer``.
"""
