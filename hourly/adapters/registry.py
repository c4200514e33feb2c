"""A registry's tags of one image repository, over the Docker Registry HTTP API v2.

``GET /v2/<name>/tags/list`` (followed through its ``Link`` pages) lists every tag of a
repository without pulling anything; the Docker SDK has no call for it. A registry that asks for a
token (``WWW-Authenticate: Bearer realm=...,service=...,scope=...``, as ghcr.io and Docker Hub do
for public images) gets an anonymous one first. A registry on the loopback (``localhost``,
``127.0.0.1``) is spoken to over plain HTTP, every other over HTTPS. Transient failures (5xx,
connection trouble, rate limits) are retried with tenacity; anything else is one line naming the fix.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

T = TypeVar("T")

from hourly.errors import UserError

DOCKER_HUB = "registry-1.docker.io"
TIMEOUT_S = 30


class _Transient(Exception):
    pass


def split_repository(repo: str) -> tuple[str, str]:
    """``ghcr.io/nvidia/jax`` → (``ghcr.io``, ``nvidia/jax``); ``ubuntu`` → (Docker Hub, ``library/ubuntu``)."""
    first, _, rest = repo.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first, rest
    return DOCKER_HUB, repo if "/" in repo else f"library/{repo}"


def _base(host: str) -> str:
    local = host.split(":")[0] in ("localhost", "127.0.0.1", "::1")
    return f"{'http' if local else 'https'}://{host}"


def _open(url: str, token: str | None) -> tuple[bytes, dict[str, str]]:
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as r:
            return r.read(), dict(r.headers)
    except urllib.error.HTTPError as e:
        if e.code >= 500 or e.code == 429:
            raise _Transient(f"{e.code} {e.reason}") from e
        raise
    except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
        raise _Transient(str(getattr(e, "reason", e))) from e


def _retrying(fn: Callable[..., T], *args: Any) -> T:
    return Retrying(stop=stop_after_attempt(4), wait=wait_exponential(multiplier=1, max=20),
                    retry=retry_if_exception(lambda e: isinstance(e, _Transient)), reraise=True)(fn, *args)


def _anonymous_token(challenge: str) -> str | None:
    """A token for a ``Bearer`` challenge, asked for without credentials (public images)."""
    params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
    realm = params.pop("realm", None)
    if not challenge.lower().startswith("bearer") or not realm:
        return None
    body, _ = _retrying(_open, f"{realm}?{urllib.parse.urlencode(params)}", None)
    doc = json.loads(body)
    return doc.get("token") or doc.get("access_token")


def list_tags(repo: str) -> list[str]:
    """Every tag of the image repository ``repo`` (``127.0.0.1:5000/jax``, ``ghcr.io/nvidia/jax``)."""
    host, name = split_repository(repo)
    url: str | None = f"{_base(host)}/v2/{name}/tags/list?n=1000"
    token: str | None = None
    tags: list[str] = []
    try:
        while url:
            try:
                body, headers = _retrying(_open, url, token)
            except urllib.error.HTTPError as e:
                challenge = e.headers.get("WWW-Authenticate", "") if e.headers else ""
                if e.code == 401 and token is None and challenge:
                    token = _anonymous_token(challenge)
                    if token:
                        continue
                if e.code in (401, 403):
                    raise UserError(f"the registry {host} refused to list the tags of {name} ({e.code} {e.reason})",
                                    "check the image name, or drop --list-tags to try each date's tag") from e
                if e.code == 404:
                    raise UserError(f"the registry {host} has no repository {name}",
                                    "check --image (the part before the tag)") from e
                raise UserError(f"the registry {host} answered {e.code} {e.reason} to the tag list of {name}",
                                "try again later, or drop --list-tags") from e
            tags += json.loads(body).get("tags") or []
            link = headers.get("Link") or headers.get("link") or ""
            m = re.search(r"<([^>]+)>;\s*rel=\"?next\"?", link)
            url = urllib.parse.urljoin(f"{_base(host)}/", m.group(1)) if m else None
    except _Transient as e:
        raise UserError(f"could not list the tags of {repo}: {e}",
                        "check the network and the registry, or drop --list-tags to try each date's tag") from e
    return tags
