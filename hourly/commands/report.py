"""``hourly report``: a markdown report (with a PNG plot) of the stored scan."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .common import ConfigOpt, Opt, Workdir


def report(workdir: Optional[str] = Workdir, out: Optional[str] = Opt(None, "--out", help="Folder for report.md and plot.png [default: <workdir>/report]"),
           min_change: Optional[float] = Opt(None, "--min-change", help="Ignore steps smaller than this relative change; 0 keeps every significant step [default: 0.01]."),
           anonymous: bool = Opt(False, "--anonymous", help="Leave out the host name."),
           config: Optional[str] = ConfigOpt) -> None:
    """Write a markdown report (with a PNG plot) ready to paste into a JAX/XLA issue."""
    from hourly.adapters.store import Store
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.render.report import write_report
    store = Store(workdir_setting(workdir, config), create=False)
    if store.load_settings("hunt-rows") is not None and not store.points("hourly"):
        from hourly.render.hunt_markdown import write_hunt_report  # a workdir of `hourly hunt`
        files = write_hunt_report(store, Path(out) if out else None)
    else:
        s = stored_settings(store, config, workdir=workdir)
        files = write_report(store, s, Path(out) if out else None, min_change, anonymous)
    print(f"report: {files.markdown}")
    if files.plot:
        print(f"plot:   {files.plot}")
