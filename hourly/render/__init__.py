"""Every rendering for a person: the one console rule (``console``), the terminal tables
and lines of each level (``scan``, ``steps``, ``bisect``, ``nightly``, ``releases``, ``hunt``) and
the markdown report with its plot (``report``, ``hunt_markdown``). Rendering reads records; it
never measures.
"""
