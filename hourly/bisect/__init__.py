"""The commit level: the search over the merged first-parent timeline of both repositories
(``search``: windows, the ``Bisector``, ``run_bisect``), its records (``records``: ``Window``,
``Probe``, ``BisectRequest``), the events it reports (``events``: ``BisectHandler``) and the answer
records and ``git bisect`` log (``answer``).
"""
