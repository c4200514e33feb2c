"""``hourly report``: a markdown report (with a PNG plot) of the stored scan."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from .common import command


@command("report")
def report(
    *,
    workdir: Optional[str],
    out: Optional[str],
    min_change: Optional[float],
    anonymous: bool,
    config: Optional[str],
) -> None:
    """Write a markdown report (with a PNG plot) ready to paste into a JAX/XLA issue."""
    from hourly.adapters.store import Store
    from hourly.errors import path_fault
    from hourly.measure.settings import stored_settings, workdir_setting
    from hourly.render.report import write_report
    from hourly.report.gather import gather_report
    store = Store(workdir_setting(workdir, config), create=False, read_only=True)  # it only reads
    folder = Path(out).absolute() if out else store.workdir / "report"
    try:
        if store.load_settings("hunt-rows") is not None and not store.points("hourly"):
            from hourly.render.hunt_markdown import write_hunt_report  # a workdir of `hourly hunt`
            files = write_hunt_report(store, folder)
        else:
            if not store.load_settings("releases"):  # the release level's results are reported
                from .common import require_a_scan
                require_a_scan(store, "report")
            s = stored_settings(store, config, workdir=workdir)
            files = write_report(gather_report(store, s, min_change, anonymous), folder)
    except OSError as e:
        if e.filename and not _inside(e.filename, folder):
            raise  # not the report's own files: unexpected
        raise path_fault(e, "the report folder", folder, "--out") from e
    from hourly.render.console import print_text

    from .common import console
    print_text(console, f"report: {files.markdown}")
    if files.plot:
        print_text(console, f"plot:   {files.plot}")


def _inside(path: str | bytes, folder: Path) -> bool:
    """Whether ``path`` is ``folder``, in it, or one of its parents (a file in the way)."""
    p = Path(str(path)).absolute()
    return p == folder or folder in p.parents or p in folder.parents
