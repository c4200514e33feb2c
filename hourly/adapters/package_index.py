"""The package-index adapter: which files of a project an index holds, and their metadata.

Two sources, one interface:

- :class:`SimpleIndex`: a PEP 503 index read through its PEP 691 JSON form (``Accept:
  application/vnd.pypi.simple.v1+json``): file names, ``requires-python``, yanked flags, PEP 700
  ``upload-time`` (the release date) and PEP 658 metadata links, with no HTML to parse and
  nothing to download but the answers. PyPI serves it; so does JAX's nightly index and any
  modern mirror. Metadata without a PEP 658 link is read from the file itself (downloaded once
  into a cache).
- :class:`LocalDir`: a directory of wheels and sdists (``--find-links DIR``), read offline; a
  file's date is the build time recorded in it (the zip entry of its METADATA).

File names are parsed with ``packaging`` (wheel tags, normalised names and versions), never by
hand; compatibility with the target interpreter uses ``packaging.tags``.
"""

from __future__ import annotations

import email.parser
import io
import json
import re
import shutil
import tarfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from hourly.errors import UserError

DEFAULT_INDEX_URL = "https://pypi.org/simple"
JSON_ACCEPT = "application/vnd.pypi.simple.v1+json"
HTTP_TIMEOUT = 60


@dataclass(frozen=True)
class DistFile:
    """One file of a project on an index."""

    filename: str
    url: str                     # http(s) URL, or a local path for LocalDir
    version: Version
    kind: str                    # "wheel" | "sdist"
    tags: frozenset[Tag] = frozenset()
    requires_python: str | None = None
    uploaded: datetime | None = None
    yanked: str | None = None    # the reason ("yanked" when none was given), None when not yanked
    metadata_url: str | None = None

    def compatible(self, tags: set[Tag], python_version: str) -> bool:
        """Installable on an interpreter with ``tags`` and ``python_version`` ("3.11.7")."""
        if self.requires_python:
            try:
                if not SpecifierSet(self.requires_python).contains(python_version, prereleases=True):
                    return False
            except InvalidSpecifier:
                pass  # an index's broken metadata does not make the file uninstallable
        return self.kind == "sdist" or bool(self.tags & tags)


def parse_filename(project: str, filename: str) -> tuple[str, Version, frozenset[Tag]] | None:
    """(kind, version, tags) of a wheel or sdist of ``project``; None for anything else."""
    want = canonicalize_name(project)
    try:
        if filename.endswith(".whl"):
            name, version, _, tags = parse_wheel_filename(filename)
            return ("wheel", version, frozenset(tags)) if name == want else None
        if filename.endswith((".tar.gz", ".zip")):
            name, version = parse_sdist_filename(filename)
            return ("sdist", version, frozenset()) if name == want else None
    except (InvalidWheelFilename, InvalidSdistFilename, ValueError):
        return None
    return None


def _iso(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return None


# --------------------------------------------------------------------------------------------
# metadata of one file

def requires_from_metadata(text: str) -> list[str]:
    """The ``Requires-Dist`` lines of a METADATA / PKG-INFO text."""
    msg = email.parser.Parser().parsestr(text, headersonly=True)
    return [str(v) for v in msg.get_all("Requires-Dist") or []]


def requires_from_egg_info(text: str) -> list[str]:
    """``*.egg-info/requires.txt`` (old setuptools sdists: sections ``[extra:marker]``) as
    Requires-Dist strings."""
    out, section = [], ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        extra, _, marker = section.partition(":")
        markers = [f'extra == "{extra}"'] if extra else []
        if marker:
            markers.append(f"({marker})")
        out.append(line + (f"; {' and '.join(markers)}" if markers else ""))
    return out


def read_requires(path: Path) -> list[str]:
    """Requires-Dist of a wheel or sdist on disk; one that is no archive (a truncated download, a
    stray file named like a wheel) is a user error naming it."""
    try:
        return _read_requires(path)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, UnicodeDecodeError) as e:
        why = (str(e).splitlines() or [""])[0].rstrip(": ")  # tarfile's lists each method tried, a line each
        raise UserError(f"{path} is not a readable {'wheel' if path.name.endswith('.whl') else 'archive'} "
                        f"({type(e).__name__}{': ' + why if why else ''})",
                        "remove it, or put the file from the package index there again") from None


def _read_requires(path: Path) -> list[str]:
    name = path.name
    if name.endswith(".whl"):
        with zipfile.ZipFile(path) as z:
            meta = next((n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            return requires_from_metadata(z.read(meta).decode("utf-8", "replace")) if meta else []
    members: dict[str, bytes] = {}
    if name.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if n.count("/") <= 2 and n.endswith(("PKG-INFO", "requires.txt")):
                    members[n] = z.read(n)
    else:
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.count("/") <= 2 and m.name.endswith(("PKG-INFO", "requires.txt")):
                    f = t.extractfile(m)
                    if f is not None:
                        members[m.name] = f.read()
    pkg_info = [v for k, v in sorted(members.items()) if k.count("/") == 1 and k.endswith("/PKG-INFO")]
    reqs = requires_from_metadata(pkg_info[0].decode("utf-8", "replace")) if pkg_info else []
    if reqs:
        return reqs
    egg = [v for k, v in sorted(members.items()) if k.endswith(".egg-info/requires.txt")]
    return requires_from_egg_info(egg[0].decode("utf-8", "replace")) if egg else []


def build_time(path: Path) -> datetime | None:
    """When a local wheel or sdist was built: the time stamped on its metadata entry (UTC)."""
    try:
        if path.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(path) as z:
                info = next((i for i in z.infolist() if i.filename.endswith(("/METADATA", "/PKG-INFO"))), None)
                return datetime(*info.date_time, tzinfo=timezone.utc) if info else None
        with tarfile.open(path) as t:
            m = next((m for m in t.getmembers() if m.name.endswith("/PKG-INFO")), None)
            return datetime.fromtimestamp(m.mtime, timezone.utc) if m else None
    except (OSError, zipfile.BadZipFile, tarfile.TarError, ValueError):
        return None


def jaxlib_requirements(requires: Iterable[str], extra: str | None) -> list[Requirement]:
    """The requirements on jaxlib that ``pip install jax[extra]`` applies (pure)."""
    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != "jaxlib":
            continue
        if req.marker is None or req.marker.evaluate({"extra": extra or ""}):
            out.append(req)
    return out


# --------------------------------------------------------------------------------------------
# the two sources

class PackageIndex:
    """Where wheels come from: a list of files per project, and their requirements."""

    def files(self, project: str) -> list[DistFile]:
        raise NotImplementedError

    def requires(self, f: DistFile) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def installer_args(self) -> list[str]:
        """What pip and uv need to install from this source."""
        raise NotImplementedError


class LocalDir(PackageIndex):
    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser().absolute()
        if not self.path.is_dir():
            raise UserError(f"--find-links {self.path} is not a directory",
                            "pass a directory holding the jax and jaxlib wheels")

    def files(self, project: str) -> list[DistFile]:
        out = []
        for p in sorted(self.path.iterdir()):
            parsed = parse_filename(project, p.name)
            if parsed is None or not p.is_file():
                continue
            kind, version, tags = parsed
            out.append(DistFile(p.name, str(p), version, kind, tags, _local_requires_python(p),
                                build_time(p)))
        return out

    def requires(self, f: DistFile) -> list[str]:
        return read_requires(Path(f.url))

    def describe(self) -> str:
        return f"--find-links {self.path}"

    def installer_args(self) -> list[str]:
        return ["--no-index", "--find-links", str(self.path)]


def _local_requires_python(path: Path) -> str | None:
    if not path.name.endswith(".whl"):
        return None
    try:
        with zipfile.ZipFile(path) as z:
            meta = next((n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)), None)
            if not meta:
                return None
            msg = email.parser.Parser().parsestr(z.read(meta).decode("utf-8", "replace"), headersonly=True)
            return msg.get("Requires-Python")
    except (OSError, zipfile.BadZipFile):
        return None


def _transient(exc: BaseException) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code >= 500 or exc.code == 429
    return isinstance(exc, (urllib.error.URLError, TimeoutError, ConnectionError))


class SimpleIndex(PackageIndex):
    def __init__(self, url: str = DEFAULT_INDEX_URL, download_dir: str | Path | None = None):
        if not url.startswith(("http://", "https://", "file://")):
            raise UserError(f"--index-url {url!r} is not a URL", "pass e.g. https://pypi.org/simple")
        self.url = url.rstrip("/") + "/"
        self.download_dir = Path(download_dir) if download_dir else None

    def _get(self, url: str, accept: str | None = None) -> bytes:
        req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
        for attempt in Retrying(retry=retry_if_exception(_transient), stop=stop_after_attempt(4),
                                wait=wait_exponential(multiplier=1, max=10), reraise=True):
            with attempt:
                with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT) as r:
                    return r.read()
        raise AssertionError("unreachable")

    def files(self, project: str) -> list[DistFile]:
        page = urllib.parse.urljoin(self.url, canonicalize_name(project) + "/")
        try:
            data = json.loads(self._get(page, JSON_ACCEPT))
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return []
            raise UserError(f"the index {self.url} answered {e.code} for {project}",
                            "check --index-url") from e
        except urllib.error.URLError as e:
            raise UserError(f"cannot reach the index {self.url} ({e.reason})",
                            "check the network, or pass --find-links DIR with the wheels") from e
        except json.JSONDecodeError as e:
            raise UserError(f"{page} did not answer in the JSON simple API (PEP 691)",
                            "use an index that supports it (PyPI does), or --find-links DIR") from e
        out = []
        for f in data.get("files", []):
            parsed = parse_filename(project, f.get("filename", ""))
            if parsed is None:
                continue
            kind, version, tags = parsed
            url = urllib.parse.urljoin(page, f["url"])
            meta = f.get("core-metadata", f.get("dist-info-metadata"))
            yanked = f.get("yanked")
            out.append(DistFile(f["filename"], url, version, kind, tags, f.get("requires-python"),
                                _iso(f.get("upload-time")),
                                (yanked if isinstance(yanked, str) and yanked else "yanked") if yanked else None,
                                url.split("#")[0] + ".metadata" if meta else None))
        return out

    def requires(self, f: DistFile) -> list[str]:
        if f.metadata_url:
            return requires_from_metadata(self._get(f.metadata_url).decode("utf-8", "replace"))
        return read_requires(self.download(f))

    def download(self, f: DistFile) -> Path:
        """The file, downloaded once into the download cache."""
        if self.download_dir is None:
            raise UserError("no download directory for index files", "pass --cache-dir")
        dest = self.download_dir / f.filename
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            tmp = dest.with_suffix(dest.suffix + ".part")
            with open(tmp, "wb") as out:
                shutil.copyfileobj(io.BytesIO(self._get(f.url.split("#")[0])), out)
            tmp.replace(dest)
        return dest

    def describe(self) -> str:
        return f"--index-url {self.url.rstrip('/')}"

    def installer_args(self) -> list[str]:
        return ["--index-url", self.url.rstrip("/")]
