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


def _is_name(text: str) -> bool:
    return bool(text) and all(c.isalnum() or c in "_-." for c in text)


def redact_word(word: str) -> str:
    """One word of a command line with a secret-looking value redacted: ``API_TOKEN=s3cret``,
    ``--env=API_TOKEN=s3cret``, ``--export=ALL,API_TOKEN=s3cret`` (an sbatch option), or a command
    given as one word (``--bench-cmd "env API_TOKEN=s3cret python b.py"``) whose words are."""
    if any(c.isspace() for c in word):
        import shlex
        try:
            words = shlex.split(word)
        except ValueError:
            return word
        redacted = [redact_word(w) for w in words]
        return shlex.join(redacted) if redacted != words else word
    key, sep, value = word.partition("=")
    if not sep:
        return word
    if key.startswith("-"):  # --flag=value
        return f"{key}={redact_word(value)}"
    if "," in key:  # ALL,API_TOKEN=...: the last name is the one assigned
        head, _, name = key.rpartition(",")
        return f"{head},{redact_word(f'{name}={value}')}"
    if _is_name(key) and looks_secret(key):
        return f"{key}={REDACTED}"
    return f"{key}={redact_word(value)}" if "=" in value else word


def redact_argv(words: list[str]) -> list[str]:
    """A command's words with every secret-looking value redacted (see :func:`redact_word`): what
    hourly prints or stores of a command line it did not run itself."""
    return [redact_word(w) for w in words]
