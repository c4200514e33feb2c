"""A workdir's results store as a labelled series, for ``hourly detect WORKDIR``."""

from __future__ import annotations

from pathlib import Path

from .config import effective, stored_scan_settings
from .scan import show
from .series import Series
from .steps import series_from_points
from .store import Store


def stored_direction(path: str | Path) -> bool | None:
    """The scan's ``higher_is_better`` as stored in a workdir (None: no stored scan)."""
    store = Store(path, create=False)
    try:
        saved = store.load_settings("scan")
        return None if not saved or "higher_is_better" not in saved else bool(saved["higher_is_better"])
    finally:
        store.close()


def load_store_series(path: str | Path) -> Series:
    store = Store(path, create=False)
    try:
        s, _ = effective({}, base=stored_scan_settings(store.load_settings("scan"), store.workdir))
        return series_from_points(show(store, s).points, str(store.path))
    finally:
        store.close()
