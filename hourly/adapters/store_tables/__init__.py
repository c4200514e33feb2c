"""The tables of the results store (:class:`hourly.adapters.store.Store`), one module per group of
tables, each a class the ``Store`` is made of: what a scan keeps (``scan``), the bisections and
their probes (``bisections``), a manual bisection's verdicts (``manual``), the daily and release
levels (``levels``), ``hourly watch`` (``watch``) and the named settings (``settings``). Each
holds the SQL of its tables; opening the file, the schema and its migrations stay in
hourly/adapters/store.py. ``rows`` holds the records they read and write, ``base`` the connection
and the transaction they share.
"""
