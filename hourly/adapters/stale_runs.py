"""Containers whose run is dead: found by the owner labels every nightly container carries.

A run that starts containers (``hourly nightly``) holds a run lock (hourly/adapters/locks.py) and labels
each container with its host, pid and the lock's path. A ``kill -9`` of the run leaves its
containers behind, GPU-holding ones included, but releases the lock: :func:`remove_dead_runs`
removes every container of this host whose owner's lock is free. ``hourly nightly`` and
``hourly container`` do it when they start; ``hourly clean`` on demand. Containers without owner
labels (``hourly container``'s pinned ones, other tools') are never touched.
"""

from __future__ import annotations

from typing import Any

from hourly.adapters import containers
from hourly.adapters.locks import owner_dead


def remove_dead_runs(docker_client: Any = None) -> list[str]:
    """Remove the containers of dead runs on this host; returns their names."""
    c = docker_client or containers.client()
    return [cont.name for cont in containers.listed(c, {"label": "hourly.owner.lock"})
            if owner_dead(cont.labels) and containers.remove_listed(c, cont)]
