"""What hourly writes for others to read (reports, JSON, cache metadata) leaves secrets out.

An environment variable whose *name* looks secret (TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL, …)
has its value replaced by ``<redacted>``; the name stays, so a reader knows it was set.

What hourly keeps for itself (the store, a job's request, a hunt's script) is read by its owner
alone where it holds such a value (:func:`holds_secret`, :func:`owner_only`), and a script that
starts hourly again passes ``--env NAME`` without the value, which hourly then takes from its own
environment (:func:`env_from_environment`). ``--env NAME=<redacted>`` (a printed line pasted as it
is) is refused: it would pass the word ``<redacted>``.
"""

from __future__ import annotations

import os
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


def secret_value(item: str) -> bool:
    """Whether ``item`` (``KEY=VALUE``) gives a secret-looking name its value (not the redacted word)."""
    key, sep, value = item.partition("=")
    return bool(sep) and _is_name(key) and looks_secret(key) and value != REDACTED


def holds_secret(data: object) -> bool:
    """Whether JSON-like ``data`` (settings, a request) holds a secret's value anywhere: a string
    ``API_TOKEN=s3cret`` (an ``--env`` item, a word of a command), or the value of a secret-looking
    environment variable's name (upper case: ``{"API_TOKEN": "s3cret"}``, not a setting's ``"key"``)
    in a mapping (an environment). What holds one is written for its owner only (:func:`owner_only`)."""
    if isinstance(data, str):
        return any(secret_value(w) for w in (data.split() if any(c.isspace() for c in data) else [data])) \
            or (data.startswith("--") and secret_value(data.partition("=")[2]))
    if isinstance(data, dict):
        return any((isinstance(k, str) and k.isupper() and _is_name(k) and looks_secret(k) and isinstance(v, str)
                    and v not in ("", REDACTED)) or holds_secret(v) for k, v in data.items())
    if isinstance(data, (list, tuple)):
        return any(holds_secret(x) for x in data)
    return False


def env_from_environment(argv: list[str]) -> tuple[list[str], dict[str, str]]:
    """A command of hourly's own with each ``--env NAME=VALUE`` whose name looks secret written
    ``--env NAME`` (hourly takes the value from its environment: hourly.adapters.proc.parse_env),
    and those values, for the environment the command is started in: a script that holds the
    command holds no secret."""
    out: list[str] = []
    env: dict[str, str] = {}
    i = 0
    while i < len(argv):
        word = argv[i]
        if word == "--env" and i + 1 < len(argv) and secret_value(argv[i + 1]):
            key, _, value = argv[i + 1].partition("=")
            out += ["--env", key]
            env[key] = value
            i += 2
            continue
        if word.startswith("--env=") and secret_value(word[len("--env="):]):
            key, _, value = word[len("--env="):].partition("=")
            out.append(f"--env={key}")
            env[key] = value
        else:
            out.append(word)
        i += 1
    return out, env


def owner_only(path: os.PathLike[str] | str, mode: int = 0o600) -> None:
    """``path`` readable by its owner alone (0600; a script 0700): it holds a secret's value."""
    os.chmod(path, mode)


def write_private(path: os.PathLike[str] | str, text: str, mode: int = 0o600) -> None:
    """``text`` into a new file ``path`` that is its owner's alone from its first byte (``mode``:
    0600, a script 0700); a file there before is replaced."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


_PASTED = re.compile(r"(?:^|[\s,='\"])([A-Za-z_][\w.\-]*)=" + re.escape(REDACTED) + r"(?=$|[\s,'\"])")


def pasted_secret(word: str) -> str | None:
    """The secret-looking name ``word`` assigns the word ``<redacted>`` (``API_TOKEN=<redacted>``,
    inside a command or an sbatch option too), or None: a line hourly printed, pasted as it is,
    would pass that word instead of the secret."""
    for m in _PASTED.finditer(word):
        if looks_secret(m[1]):
            return m[1]
    return None
