"""What hourly writes for others to read (reports, JSON, cache metadata) leaves secrets out.

An environment variable whose *name* looks secret (TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL, …)
has its value replaced by ``<redacted>``; the name stays, so a reader knows it was set.
"""

from __future__ import annotations

import re

REDACTED = "<redacted>"

#: name parts that mark a secret; matched as words of the name (API_KEY, GH_TOKEN, AWS_SECRET_ACCESS_KEY)
_SECRET = re.compile(r"(^|[_\-.])(TOKEN|KEY|SECRET|PASSWORD|PASSWD|PASS|CREDENTIALS?|AUTH|AUTHORIZATION|"
                     r"COOKIE|SESSION|PRIVATE|SIGNATURE|CERT)S?($|[_\-.])", re.IGNORECASE)
_SECRET_INSIDE = re.compile(r"TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|APIKEY|ACCESSKEY", re.IGNORECASE)


def looks_secret(name: str) -> bool:
    return bool(_SECRET.search(name) or _SECRET_INSIDE.search(name))


def redact_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if looks_secret(k) else v) for k, v in env.items()}


def redact_assignments(items: list[str]) -> list[str]:
    """``KEY=VALUE`` strings (``--env``) with secret values redacted."""
    out = []
    for item in items:
        k, sep, v = item.partition("=")
        out.append(f"{k}={REDACTED}" if sep and looks_secret(k) else item)
    return out
