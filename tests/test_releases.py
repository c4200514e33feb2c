"""The release level: real wheels of stand-in jax/jaxlib in a local index, real environments made
by uv (and by pip), real installs with --no-index, a real JAX-like git repo with release tags."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from packaging.version import Version

from hourly.adapters.package_index import LocalDir, jaxlib_requirements, read_requires, requires_from_egg_info
from hourly.adapters.store import SCHEMA_VERSION, Store
from hourly.adapters.venvs import find_uv, target_python
from hourly.cli import main
from hourly.errors import UserError
from hourly.model import ReleasePoint, Status
from hourly.releases import plan as R
from hourly.releases.run import as_of_release_args
from tests.argv import with_flags

REGEX = r"dispatch_us:\s*(?P<value>[0-9.]+)"
XLA_A, XLA_B = "a" * 40, "b" * 40

# (jax version, its dispatch time in µs or "crash", its Requires-Dist on jaxlib for [cpu], build date)
JAX = [
    ("0.1.0", 100.0, "jaxlib==0.1.0", (2023, 1, 10)),
    ("0.1.1", 100.0, "jaxlib==0.1.1", (2023, 2, 10)),
    ("0.2.0", 150.0, "jaxlib==0.2.0", (2023, 3, 10)),          # the planted regression
    ("0.2.1", 150.0, "jaxlib<=0.2.1,>=0.2.0", (2023, 4, 10)),  # no jaxlib 0.2.1: paired with 0.2.0
    ("0.2.2", "crash", "jaxlib==0.2.2", (2023, 5, 10)),
    ("0.3.0", 150.0, "jaxlib==0.3.0", (2023, 6, 10)),          # jaxlib 0.3.0 only for another Python
    ("0.3.1.dev20230701", 150.0, "jaxlib==0.3.1.dev20230701", (2023, 7, 1)),
]
JAXLIB = {"0.1.0": "py3-none-any", "0.1.1": "py3-none-any", "0.2.0": "py3-none-any",
          "0.2.2": "py3-none-any", "0.3.0": "cp27-cp27mu-manylinux1_x86_64",
          "0.3.1.dev20230701": "py3-none-any"}


def write_wheel(dist: Path, name: str, version: str, files: dict[str, str], requires: list[str] = (),
                tag: str = "py3-none-any", when: tuple = (2023, 1, 1)) -> Path:
    """A real wheel: METADATA, WHEEL and a RECORD with every file's hash, dated ``when``."""
    info = f"{name}-{version}.dist-info"
    extras = sorted({r.split('extra == "')[1].split('"')[0] for r in requires if 'extra == "' in r})
    meta = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.8\n"
            + "".join(f"Provides-Extra: {e}\n" for e in extras)
            + "".join(f"Requires-Dist: {r}\n" for r in requires))
    wheel = (f"Wheel-Version: 1.0\nGenerator: hourly-tests\nRoot-Is-Purelib: "
             f"{'true' if tag.endswith('none-any') else 'false'}\nTag: {tag}\n")
    entries = {**files, f"{info}/METADATA": meta, f"{info}/WHEEL": wheel}
    record = []
    for path, text in entries.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    entries[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    out = dist / f"{name}-{version}-{tag}.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, text in entries.items():
            z.writestr(zipfile.ZipInfo(path, date_time=(*when, 12, 0, 0)), text)
    return out


@pytest.fixture(scope="session")
def wheel_dir(tmp_path_factory) -> Path:
    """The local index: stand-in jax and jaxlib wheels at several versions."""
    dist = tmp_path_factory.mktemp("wheels")
    for version, value, req, when in JAX:
        body = ('raise RuntimeError("stand-in jax crashes at import")\n' if value == "crash" else
                f'import jaxlib\n__version__ = "{version}"\nDISPATCH_US = {value}\n')
        write_wheel(dist, "jax", version, {"jax/__init__.py": body},
                    [f'{req}; extra == "cpu"', 'jaxlib==0.1.0; extra == "minimum-jaxlib"'], when=when)
    for version, tag in JAXLIB.items():
        write_wheel(dist, "jaxlib", version, {"jaxlib/__init__.py": f'__version__ = "{version}"\n'}, tag=tag)
    (dist / "README.txt").write_text("not a wheel\n")
    return dist


BENCH = """\
import os, random, sys, time
import jax
with open(os.environ["RUNS_FILE"], "a") as f:
    f.write(jax.__version__ + "\\n")
block = os.environ.get("BLOCK_FILE", "")
if block and os.path.exists(block) and jax.__version__ == os.environ.get("BLOCK_VERSION"):
    with open(block + ".started", "w") as f:
        f.write(str(os.getpid()))
    time.sleep(120)
print("dispatch_us:", jax.DISPATCH_US * (1 + random.uniform(-0.002, 0.002)))
"""


@pytest.fixture
def bench(tmp_path) -> Path:
    d = tmp_path / "bench"
    d.mkdir()
    (d / "bench.py").write_text(BENCH)
    return d


@pytest.fixture(scope="session")
def jax_repo(tmp_path_factory) -> Path:
    """A real git repository with JAX's release tags and XLA pins in third_party/xla/workspace.bzl."""
    repo = tmp_path_factory.mktemp("jax-src")
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}

    def git(*args, when=None):
        e = dict(env, **({"GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when} if when else {}))
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=e, capture_output=True)

    git("init", "-q", "-b", "main")
    bzl = repo / "third_party" / "xla" / "workspace.bzl"
    bzl.parent.mkdir(parents=True)
    for version, _, _, (y, m, d) in JAX[:3]:
        # one commit moving the XLA pin (to B from 0.2.0 on), then two more, then the tag
        bzl.write_text(f'XLA_COMMIT = "{XLA_B if Version(version) >= Version("0.2.0") else XLA_A}"\n'
                       f'XLA_SHA256 = "0"\n')
        for i in range(3):
            (repo / "log.txt").write_text(f"{version} {i}\n")
            git("add", "-A")
            git("commit", "-q", "-m", f"{version} change {i}", when=f"{y}-{m:02d}-{d - 2 + i:02d}T10:00:00Z")
        git("tag", f"jax-v{version}")
    return repo


def args(wheel_dir, bench, tmp_path, frm="0.1.0", to="0.3.0", *extra) -> list[str]:
    return with_flags(["releases", "--from", frm, "--to", to, "--find-links", str(wheel_dir), "--bench-cmd",
                       "python bench.py", "--bench-cwd", str(bench), "--metric-regex", REGEX, "--lower-is-better",
                       "--env", f"RUNS_FILE={tmp_path / 'runs.txt'}", "--cache-dir", str(tmp_path / "cache"),
                       "--workdir", str(tmp_path / "work")], *extra)


def runs(tmp_path) -> list[str]:
    p = tmp_path / "runs.txt"
    return p.read_text().split() if p.exists() else []


# ------------------------------------------------------------------------------ pure parts

def test_choose_jaxlib_same_version_then_jax_requirement_then_none():
    libs = [Version(v) for v in ("0.1.0", "0.2.0", "0.3.0")]
    assert R.choose_jaxlib(Version("0.2.0"), libs, None, None) == (Version("0.2.0"), "same version")
    reqs = ['jaxlib<=0.2.1,>=0.1.0; extra == "cpu"', 'jaxlib==0.1.0; extra == "minimum-jaxlib"']
    got, how = R.choose_jaxlib(Version("0.2.1"), libs, reqs, None)
    assert got == Version("0.2.0") and "newest allowed" in how  # 0.3.0 is newer than jax itself
    got, how = R.choose_jaxlib(Version("0.2.5"), libs, ['jaxlib==0.2.5; extra == "cpu"'], None)
    assert got is None and "jaxlib==0.2.5" in how
    # only a minimum: a lower bound, still never newer than jax
    got, _ = R.choose_jaxlib(Version("0.2.9"), libs, ['jaxlib==0.1.0; extra == "minimum-jaxlib"'], None)
    assert got == Version("0.2.0")
    # the GPU extra's own requirement wins over the CPU one
    reqs = ['jaxlib==0.1.0; extra == "cpu"', 'jaxlib==0.2.0; extra == "cuda12"']
    assert R.choose_jaxlib(Version("0.2.4"), libs, reqs, "cuda12")[0] == Version("0.2.0")
    assert R.choose_jaxlib(Version("0.2.4"), libs, [], None)[0] is None
    # newer jax: an unconditional requirement, combined with the extra's
    reqs = ["jaxlib<=0.3.0,>=0.1.0", 'jaxlib<0.2.0; extra == "cpu"']
    assert R.choose_jaxlib(Version("0.2.4"), libs, reqs, None)[0] == Version("0.1.0")
    assert R.choose_jaxlib(Version("0.2.4"), libs, reqs[:1], None)[0] == Version("0.2.0")


def test_metadata_readers():
    text = "numpy>=1.22\n\n[cpu]\njaxlib==0.4.14\n\n[cuda:python_version < \"3.12\"]\njaxlib==0.4.14\n"
    reqs = requires_from_egg_info(text)
    assert reqs[0] == "numpy>=1.22" and reqs[1] == 'jaxlib==0.4.14; extra == "cpu"'
    assert [str(r.specifier) for r in jaxlib_requirements(reqs, "cpu")] == ["==0.4.14"]
    assert jaxlib_requirements(reqs, None) == []
    assert R.xla_pin('XLA_COMMIT = "0123456789abcdef0123456789abcdef01234567"\n') == "0123456789abcdef0123456789abcdef01234567"
    assert R.xla_pin("nothing") is None


def test_dependencies_as_of_the_day_after_the_release():
    now = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert as_of_release_args("2023-06-23T00:24:04Z", now) == [
        "--exclude-newer", "2023-06-24T00:24:04Z", "--exclude-newer-package", "jax=2026-01-02T03:04:05Z",
        "--exclude-newer-package", "jaxlib=2026-01-02T03:04:05Z"]
    assert as_of_release_args(None, now) == []


def test_plan_from_a_local_index(wheel_dir, tmp_path):
    s = R.ReleaseSettings("0.1.0", "0.3.1.dev20230701", bench_cmd="python b.py", find_links=str(wheel_dir),
                          cache_dir=str(tmp_path))
    s = s.validate()
    target = target_python(None)
    plan = {p.version: p for p in R.plan_releases(LocalDir(wheel_dir), s, target)}
    # the dev version is inside the window because --to names one; without it and without --pre, not
    assert list(plan) == [v for v, *_ in JAX]
    assert plan["0.2.1"].jaxlib == "0.2.0" and not plan["0.2.1"].missing
    assert plan["0.3.0"].missing and "jaxlib 0.3.0" in plan["0.3.0"].missing and target.short in plan["0.3.0"].missing
    assert plan["0.1.1"].released == "2023-02-10T12:00:00Z"
    s = replace(s, to="0.3.0")
    assert "0.3.1.dev20230701" not in [p.version for p in R.plan_releases(LocalDir(wheel_dir), s, target)]
    s = replace(s, to="0.4.0", pre=True)
    assert "0.3.1.dev20230701" in [p.version for p in R.plan_releases(LocalDir(wheel_dir), s, target)]
    wheel = next(wheel_dir.glob("jax-0.2.1-*.whl"))
    assert 'jaxlib<=0.2.1,>=0.2.0; extra == "cpu"' in read_requires(wheel)


@pytest.fixture
def http_index(wheel_dir):
    """A real HTTP server on localhost speaking PEP 691 JSON for the wheel directory: upload
    times, a yanked release, PEP 658 metadata files (and 404 for other projects)."""
    import http.server
    import threading

    def page(project: str) -> bytes:
        files = []
        for f in sorted(wheel_dir.glob(f"{project}-*.whl")):
            version = f.name.split("-")[1]
            when = next(w for v, _, _, w in JAX if v == version) if project == "jax" else (2023, 1, 1)
            files.append({"filename": f.name, "url": f"../../files/{f.name}", "hashes": {},
                          "requires-python": ">=3.8", "upload-time": "%04d-%02d-%02dT08:30:00.123456Z" % when,
                          "core-metadata": True, "yanked": "broken wheel" if version == "0.1.1" else False})
        return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = self.path.strip("/").split("/")
            if parts[0] == "simple" and len(parts) == 2 and parts[1] in ("jax", "jaxlib"):
                body, kind = page(parts[1]), "application/vnd.pypi.simple.v1+json"
            elif parts[0] == "files" and parts[-1].endswith(".metadata"):
                with zipfile.ZipFile(wheel_dir / parts[-1][: -len(".metadata")]) as z:
                    body = z.read(next(n for n in z.namelist() if n.endswith("/METADATA")))
                kind = "text/plain"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


def test_plan_from_a_json_simple_index_over_http(http_index, tmp_path):
    s = R.ReleaseSettings("0.1.0", "0.3.0", bench_cmd="python b.py", index_url=http_index, cache_dir=str(tmp_path))
    s = s.validate()
    plan = {p.version: p for p in R.plan_releases(s.make_index(), s, target_python(None))}
    assert list(plan) == ["0.1.0", "0.1.1", "0.2.0", "0.2.1", "0.2.2", "0.3.0"]
    assert plan["0.2.0"].released == "2023-03-10T08:30:00Z"           # PEP 700 upload time
    assert plan["0.1.1"].yanked == "broken wheel"
    assert plan["0.2.1"].jaxlib == "0.2.0" and "newest allowed" in plan["0.2.1"].pairing  # PEP 658 metadata
    assert plan["0.3.0"].missing and "cp27" in plan["0.3.0"].missing
    assert not (tmp_path / "downloads").exists()  # metadata files sufficed: no wheel downloaded
    s = replace(s, index_url=http_index.replace("/simple", "/nothing"))
    with pytest.raises(UserError, match="no jax on"):
        R.plan_releases(s.make_index(), s, target_python(None))


def test_another_interpreter_gets_its_own_tags(tmp_path):
    other = tmp_path / "python-other"
    other.symlink_to(sys.executable)  # another path: hourly asks the interpreter itself
    t = target_python(str(other))
    assert t.exe == str(other) and t.version == ".".join(map(str, sys.version_info[:3]))
    assert any(str(tag).startswith(f"{t.short}-{t.short}-") for tag in t.tags)
    assert any(str(tag) == "py3-none-any" for tag in t.tags)


def test_dry_run_lists_the_plan_and_installs_nothing(wheel_dir, tmp_path, capsys):
    assert main(["releases", "--from", "0.2.0", "--to", "0.3.0", "--find-links", str(wheel_dir), "--dry-run",
                 "--json", "--cache-dir", str(tmp_path / "cache"), "--workdir", str(tmp_path / "work")]) == 0
    plan = json.loads(capsys.readouterr().out)["releases"]
    assert [(p["version"], p["jaxlib"], bool(p["missing"])) for p in plan] == [
        ("0.2.0", "0.2.0", False), ("0.2.1", "0.2.0", False), ("0.2.2", "0.2.2", False), ("0.3.0", "0.3.0", True)]
    assert not (tmp_path / "cache").exists() and not (tmp_path / "work").exists()


def test_store_migrates_a_schema_3_store_to_add_the_release_table(tmp_path):
    store = Store(tmp_path)
    store.conn.execute("DROP TABLE releases")
    store.conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    store.close()
    store = Store(tmp_path)
    assert SCHEMA_VERSION >= 4
    assert int(store.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]) == SCHEMA_VERSION
    store.add_release("k", ReleasePoint("0.1.0", "0.1.0", "2023-01-10T12:00:00Z", Status.OK, 1.0, [1.0]))
    store.add_release("k", ReleasePoint("0.1.0", "0.1.0", "2023-01-10T12:00:00Z", Status.CRASHED))
    store.add_release("k", ReleasePoint("0.2.0", None, None, Status.MISSING, detail="no wheel"))
    got = store.releases("k")
    assert got["0.1.0"].status is Status.CRASHED and got["0.1.0"].released == "2023-01-10T12:00:00Z"  # the latest
    assert got["0.2.0"] == ReleasePoint("0.2.0", None, None, Status.MISSING, detail="no wheel")


def test_bad_input_is_one_line(tmp_path, wheel_dir, capsys):
    assert main(["releases", "--from", "0.3", "--to", "0.1", "--bench-cmd", "x", "--find-links", str(wheel_dir)]) == 1
    assert "swap them" in capsys.readouterr().err
    # two flags that do not go together: a usage error (exit 2, README's exit codes), one line with the fix
    assert main(["releases", "--from", "0.1", "--to", "0.2", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--index-url", "https://example.invalid/simple"]) == 2
    err = capsys.readouterr().err
    assert "--index-url and --find-links" in err and "pass one of them" in err and len(err.strip().splitlines()) == 1
    assert main(["releases", "--from", "nope", "--to", "0.2", "--bench-cmd", "x"]) == 1
    assert main(["releases", "--from", "5.0", "--to", "6.0", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--cache-dir", str(tmp_path / "c")]) == 1
    assert "no jax release between 5.0 and 6.0" in capsys.readouterr().err
    assert main(["releases", "--from", "0.1", "--to", "0.2", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--installer", "pip", "--deps-as-of-release"]) == 1
    assert "needs uv" in capsys.readouterr().err
    # pip cannot exclude newer uploads: with pip, today's dependencies must be asked for
    assert main(["releases", "--from", "0.1", "--to", "0.2", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--installer", "pip"]) == 1
    assert "--deps-today" in capsys.readouterr().err
    assert main(["releases", "--from", "0.1", "--to", "0.2", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--deps-today", "--deps-as-of-release"]) == 2
    assert main(["releases", "--from", "0.1", "--to", "0.2", "--bench-cmd", "x", "--find-links", str(wheel_dir),
                 "--jax-repo", str(tmp_path / "no-such-checkout")]) == 1
    assert "--jax-repo" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()


def test_a_file_named_like_a_wheel_that_is_none_is_one_line_naming_it(tmp_path, wheel_dir, capsys):
    """A truncated or stray jax-*.whl in --find-links was `unexpected error: BadZipFile` (exit 3)."""
    import shutil
    dist = tmp_path / "wheels"
    shutil.copytree(wheel_dir, dist)
    for old in dist.glob("jax-0.2.1-*.whl"):
        old.write_bytes(b"<html>502 Bad Gateway</html>")  # what a failed download leaves
    code = main(["releases", "--from", "0.2.0", "--to", "0.3.0", "--bench-cmd", "sh -c true", "--dry-run", "--find-links", str(dist),
                 "--workdir", str(tmp_path / "w"), "--cache-dir", str(tmp_path / "c")])
    err = capsys.readouterr().err
    assert code == 1, err
    line = _error_line(err)
    assert "jax-0.2.1-" in line and ".whl is not a readable wheel (BadZipFile" in line and "remove it" in line
    # a broken sdist: one line too, never tarfile's list of the methods it tried
    for whl in dist.glob("jax-0.2.1-*.whl"):
        whl.unlink()
    (dist / "jax-0.2.1.tar.gz").write_bytes(b"x")
    assert main(["releases", "--from", "0.2.0", "--to", "0.3.0", "--bench-cmd", "sh -c true", "--dry-run", "--find-links", str(dist),
                 "--workdir", str(tmp_path / "w"), "--cache-dir", str(tmp_path / "c")]) == 1
    err = capsys.readouterr().err
    line = _error_line(err)
    assert "method gz" not in err and "Traceback" not in err
    assert "jax-0.2.1.tar.gz is not a readable archive (ReadError" in line


# ------------------------------------------------------------------ real environments, real runs

@pytest.mark.skipif(find_uv() is None, reason="uv is not installed (pip install 'hourly[uv]')")
def test_releases_find_the_step_and_hand_over(wheel_dir, bench, jax_repo, tmp_path, capsys):
    assert main(args(wheel_dir, bench, tmp_path, "0.1.0", "0.3.0", "--repeats", "2", "--jax-repo",
                     str(jax_repo), "--deps-as-of-release", "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    points = {p["version"]: p for p in out["points"]}
    assert list(points) == ["0.1.0", "0.1.1", "0.2.0", "0.2.1", "0.2.2", "0.3.0"]
    assert [points[v]["status"] for v in points] == ["ok", "ok", "ok", "ok", "crashed", "missing"]
    assert points["0.2.1"]["jaxlib"] == "0.2.0"
    assert "no jaxlib 0.3.0 wheel" in points["0.3.0"]["detail"]
    assert points["0.1.0"]["released"] == "2023-01-10T12:00:00Z"
    assert {p["installer"] for p in out["points"] if p["status"] != "missing"} == {"uv"}
    for v in ("0.1.0", "0.1.1"):
        assert len(points[v]["samples"]) == 2 and abs(points[v]["value"] - 100) < 1
    assert abs(points["0.2.0"]["value"] - 150) < 1
    assert sorted(runs(tmp_path)) == sorted(["0.1.0", "0.1.1", "0.2.0", "0.2.1"] * 2)

    kinds = {st["kind"]: st for st in out["steps"]}
    assert set(kinds) == {"regression", "crash"}
    reg = kinds["regression"]
    assert (reg["last_good"]["version"], reg["first_bad"]["version"]) == ("0.1.1", "0.2.0")
    assert reg["tags"] == ["jax-v0.1.1..jax-v0.2.0"]
    assert reg["jax_commits"] == 3 and (reg["xla_before"], reg["xla_after"]) == (XLA_A, XLA_B)
    assert reg["relative_change"] == pytest.approx(0.5, abs=0.01)
    nightly, bisect = reg["next_commands"]
    assert shlex.split(nightly)[:6] == ["hourly", "nightly", "--from", "2023-02-10", "--to", "2023-03-10"]
    b = shlex.split(bisect)
    assert b[b.index("--good") + 1] == "2023-02-10T10:00:00Z"  # the tag's commit time
    assert "--lower-is-better" in b and b[b.index("--bench-cmd") + 1] == "python bench.py"
    for cmd in (nightly, bisect):  # every printed command parses with hourly's own CLI
        assert main(shlex.split(cmd)[1:] + ["--help"]) == 0
    capsys.readouterr()
    crash = kinds["crash"]
    assert (crash["last_good"]["version"], crash["first_bad"]["version"]) == ("0.2.1", "0.2.2")
    assert crash["unknown"] and "jax-v0.2.2" in crash["unknown"]  # the checkout lacks that tag
    assert "--mode" in crash["next_commands"][1]
    assert crash["first_bad"]["jaxlib"] == "0.2.2" and crash["tags"] == ["jax-v0.2.1..jax-v0.2.2",
                                                                          "jaxlib-v0.2.0..jaxlib-v0.2.2"]

    # the same command again measures nothing; the table shows the stored results and marks
    assert main(args(wheel_dir, bench, tmp_path, "0.1.0", "0.3.0", "--repeats", "2",
                     "--jax-repo", str(jax_repo), "--deps-as-of-release")) == 0
    text = capsys.readouterr().out
    assert "0 measured now" in text and "✗ crashed" in text
    assert re.search(r"▼ \+(49|50)\.\d%", text), text
    assert "3 JAX commits between the tags" in text and "hourly nightly --from 2023-02-10" in text
    assert len(runs(tmp_path)) == 8

    # --show, and hourly report on the workdir
    assert main(["releases", "--show", "--workdir", str(tmp_path / "work"), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["points"]) == 6
    assert main(["report", "--workdir", str(tmp_path / "work")]) == 0
    md = (tmp_path / "work" / "report" / "report.md").read_text()
    assert "| 0.2.0 | 0.2.0 |" in md and "jax-v0.1.1..jax-v0.2.0" in md


def test_pip_fills_the_environments_without_uv(wheel_dir, bench, tmp_path, capsys):
    assert main(args(wheel_dir, bench, tmp_path, "0.1.1", "0.2.0", "--installer", "pip", "--deps-today",
                     "--json")) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(p["version"], p["status"], p["installer"]) for p in out["points"]] == [
        ("0.1.1", "ok", "pip"), ("0.2.0", "ok", "pip")]
    assert "pip" in out["installer"]
    envs = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(envs) == 2 and all((tmp_path / "cache" / e / ".hourly-ready").exists() for e in envs)


@pytest.mark.skipif(find_uv() is None, reason="uv is not installed (pip install 'hourly[uv]')")
def test_kill_9_then_rerun_does_not_redo_finished_releases(wheel_dir, bench, tmp_path, capsys):
    block = tmp_path / "block"
    block.write_text("")
    argv = args(wheel_dir, bench, tmp_path, "0.1.0", "0.2.1", "--env", f"BLOCK_FILE={block}",
                "--env", "BLOCK_VERSION=0.2.0")
    started = Path(str(block) + ".started")

    def killed_at_the_block(*more: str) -> None:
        """hourly releases started, kill -9'ed (its process group, then the benchmark, which runs in a
        session of its own) once the blocked release's benchmark runs."""
        started.unlink(missing_ok=True)
        p = subprocess.Popen([sys.executable, "-m", "hourly", *argv, *more], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while not started.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), "the blocked benchmark never started"
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        os.kill(int(started.read_text()), signal.SIGKILL)

    killed_at_the_block()
    assert runs(tmp_path) == ["0.1.0", "0.1.1", "0.2.0"]
    block.unlink()

    assert main(argv + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in out["points"]] == ["ok"] * 4
    assert runs(tmp_path) == ["0.1.0", "0.1.1", "0.2.0", "0.2.0", "0.2.1"]  # 0.1.x not run again
    rows = sqlite3.connect(tmp_path / "work" / "hourly.sqlite").execute(
        "SELECT version, COUNT(*) FROM releases GROUP BY version ORDER BY version").fetchall()
    assert rows == [("0.1.0", 1), ("0.1.1", 1), ("0.2.0", 1), ("0.2.1", 1)]

    # --rerun killed at 0.2.0, then the same command again: the releases that rerun measured are
    # kept, the rest measured again (the printed resume line keeps --rerun: it began the rerun over)
    block.write_text("")
    killed_at_the_block("--rerun")
    block.unlink()
    before = ["0.1.0", "0.1.1", "0.2.0", "0.2.0", "0.2.1"]
    assert runs(tmp_path) == before + ["0.1.0", "0.1.1", "0.2.0"]
    assert main(argv + ["--rerun"]) == 0
    assert "going on with the --rerun begun" in capsys.readouterr().err
    assert runs(tmp_path) == before + ["0.1.0", "0.1.1", "0.2.0", "0.2.0", "0.2.1"]  # 0.1.x not a third time
    assert main(argv) == 0  # the rerun ended: nothing measured
    assert runs(tmp_path) == before + ["0.1.0", "0.1.1", "0.2.0", "0.2.0", "0.2.1"]


def test_a_step_between_releases_with_the_same_jaxlib_offers_the_jax_only_bisection(capsys):
    """When both releases install the same jaxlib, the step is in JAX's Python: besides the nightly
    and two-repository commands, the JAX-only bisection of the same window is offered, and every
    command parses with hourly's own CLI."""
    from hourly.model import ReleasePoint, Status
    from hourly.releases.plan import ReleaseSettings, ReleaseStep, TagFacts, next_commands
    before = ReleasePoint("0.4.24", "0.4.23", "2024-02-06T12:00:00Z", Status.OK, 10.0)
    after = ReleasePoint("0.4.25", "0.4.23", "2024-02-24T12:00:00Z", Status.OK, 20.0)
    s = ReleaseSettings("0.4.24", "0.4.25", bench_cmd="python bench.py", higher_is_better=False)
    step = ReleaseStep("regression", before, after, 1.0, 10.0, 20.0, 9.0,
                       TagFacts(time_before="2024-02-06T10:00:00Z", time_after="2024-02-24T09:00:00Z"))
    cmds = [shlex.split(c) for c in next_commands(step, s)]
    assert [c[:2] for c in cmds] == [["hourly", "nightly"], ["hourly", "bisect"], ["hourly", "bisect"]]
    only = cmds[2]
    assert only[2:4] == ["--only", "jax"]
    assert only[only.index("--good") + 1] == "2024-02-06T10:00:00Z" and "--lower-is-better" in only
    for c in cmds:
        assert main(c[1:] + ["--help"]) == 0
    capsys.readouterr()
    step.after = ReleasePoint("0.4.25", "0.4.25", "2024-02-24T12:00:00Z", Status.OK, 20.0)
    assert [shlex.split(c)[:4] for c in next_commands(step, s)][-1] != ["hourly", "bisect", "--only", "jax"]


# ------------------------------------------- old releases: dependencies of their day, drift, gaps

@pytest.fixture(scope="session")
def drift_dir(tmp_path_factory) -> Path:
    """A local index where the environment, not JAX, breaks: 0.5.x import a NumPy without
    ``trapz`` (NumPy 2 removed it), 0.6.x's jaxlib needs an ml-dtypes the index lacks; 0.8.x
    measure alike, and 0.8.1's jaxlib is for another Python only (a gap in the middle)."""
    dist = tmp_path_factory.mktemp("drift-wheels")
    write_wheel(dist, "numpy", "2.0.0", {"numpy/__init__.py": '__version__ = "2.0.0"\n'})
    for i in range(3):
        v = f"0.5.{i}"
        write_wheel(dist, "jax", v, {"jax/__init__.py": f'import numpy\nnumpy.trapz\n__version__ = "{v}"\n'},
                    [f'jaxlib=={v}; extra == "cpu"', "numpy"], when=(2023, 5, 1 + i))
        write_wheel(dist, "jaxlib", v, {"jaxlib/__init__.py": f'__version__ = "{v}"\n'})
        v = f"0.6.{i}"
        write_wheel(dist, "jax", v, {"jax/__init__.py": f'__version__ = "{v}"\nDISPATCH_US = 100.0\n'},
                    [f'jaxlib=={v}; extra == "cpu"'], when=(2023, 6, 1 + i))
        write_wheel(dist, "jaxlib", v, {"jaxlib/__init__.py": f'__version__ = "{v}"\n'}, ["ml-dtypes>=0.1"])
        v = f"0.8.{i}"
        write_wheel(dist, "jax", v, {"jax/__init__.py": f'__version__ = "{v}"\nDISPATCH_US = 100.0\n'},
                    [f'jaxlib=={v}; extra == "cpu"'], when=(2023, 8, 1 + 10 * i))
        write_wheel(dist, "jaxlib", v, {"jaxlib/__init__.py": f'__version__ = "{v}"\n'},
                    tag="cp27-cp27mu-manylinux1_x86_64" if i == 1 else "py3-none-any")
    return dist


def bench_logs(tmp_path) -> list[str]:
    """The releases whose benchmark ran, from the run logs' names (bench-jax-<version>-...)."""
    return sorted({p.name.split("-")[2] for p in (tmp_path / "work" / "logs" / "releases").glob("bench-jax-*.log")})


def _error_line(err: str) -> str:
    """The error's line of stderr (progress lines come before it when stderr is not a terminal)."""
    return next(line for line in err.splitlines() if line.startswith("hourly: error:"))


def test_every_release_crashing_the_same_way_stops_early_with_the_cause(drift_dir, bench, tmp_path, capsys):
    code = main(args(drift_dir, bench, tmp_path, "0.5.0", "0.5.2"))
    err = capsys.readouterr().err
    assert code == 1, err
    first = _error_line(err)
    assert first.startswith("hourly: error:") and "AttributeError: module 'numpy' has no attribute 'trapz'" in first
    assert "jax 0.5.2" in err and "not measured" in err
    assert bench_logs(tmp_path) == ["0.5.0", "0.5.1"]  # 0.5.2 never ran
    # what did run is stored, the cause in its detail
    assert main(["releases", "--show", "--json", "--workdir", str(tmp_path / "work")]) == 0
    points = json.loads(capsys.readouterr().out)["points"]
    assert [(p["version"], p["status"]) for p in points] == [("0.5.0", "crashed"), ("0.5.1", "crashed")]
    assert all("module 'numpy' has no attribute 'trapz'" in p["detail"] for p in points)


def test_every_release_failing_to_install_exits_1_with_the_line_naming_the_package(drift_dir, bench, tmp_path,
                                                                                    capsys):
    code = main(args(drift_dir, bench, tmp_path, "0.6.0", "0.6.2"))
    err = capsys.readouterr().err
    assert code == 1, err
    assert "ml-dtypes was not found" in _error_line(err)
    assert bench_logs(tmp_path) == []
    installs = sorted(p.name for p in (tmp_path / "work" / "logs" / "releases").glob("install-jax-*[0-9].log"))
    assert installs == ["install-jax-0.6.0.log", "install-jax-0.6.1.log"]  # 0.6.2 never installed
    # one release alone, failing: no early stop to make, still exit 1 with the cause, not "no steps found"
    code = main(args(drift_dir, bench, tmp_path, "0.6.2", "0.6.2"))
    out, err = capsys.readouterr()
    assert code == 1 and "ml-dtypes was not found" in _error_line(err) and "no steps found" not in out
    assert main(["releases", "--show", "--json", "--workdir", str(tmp_path / "work")]) == 0
    (point,) = json.loads(capsys.readouterr().out)["points"]
    assert point["status"] == "install_failed" and "ml-dtypes was not found" in point["detail"]
    log = (tmp_path / "work" / "logs" / "releases" / "install-jax-0.6.2.log").read_text()
    last = [line for line in log.splitlines() if line.strip() and not line.startswith("#")][-1]
    assert last.strip() not in point["detail"]  # the cause, not the resolver's conclusion


def test_a_gap_is_named_with_the_command_that_fills_it(drift_dir, bench, tmp_path, capsys):
    # two releases of one run each: their noise is assumed, not measured, so no all-clear (exit 1)
    assert main(args(drift_dir, bench, tmp_path, "0.8.0", "0.8.2", "--json")) == 1
    out = json.loads(capsys.readouterr().out)
    assert [p["status"] for p in out["points"]] == ["ok", "missing", "ok"] and out["steps"] == []
    (gap,) = out["gaps"]
    assert gap["versions"] == ["0.8.1"] and (gap["after"], gap["before"]) == ("0.8.0", "0.8.2")
    cmd = shlex.split(gap["command"])
    assert cmd[:6] == ["hourly", "nightly", "--from", "2023-08-01", "--to", "2023-08-21"]
    assert main(cmd[1:] + ["--help"]) == 0
    capsys.readouterr()
    assert "too few releases to measure the noise" in out["summary"] and "no steps found" not in out["summary"]
    assert main(args(drift_dir, bench, tmp_path, "0.8.0", "0.8.2")) == 1
    text = capsys.readouterr().out
    assert "no steps found" not in text and "no measurement for jax 0.8.1" in text and gap["command"] in text
    assert "too few releases to measure the noise" in text


@pytest.fixture
def dated_index(tmp_path):
    """A real HTTP server on localhost speaking PEP 691 JSON, with upload times, for a jax 0.7.0
    released in March 2023 whose jaxlib needs ``depstand``: depstand 1.0 was uploaded before the
    release, 2.0 a year after it; jaxlib 0.7.0 itself was uploaded again in 2025."""
    import http.server
    import threading
    dist = tmp_path / "dated"
    dist.mkdir()
    uploaded = {
        write_wheel(dist, "jax", "0.7.0", {"jax/__init__.py": 'import depstand\n__version__ = "0.7.0"\n'
                                                             'DISPATCH_US = 100.0\n'}).name: "2023-03-01T08:00:00Z",
        write_wheel(dist, "jaxlib", "0.7.0", {"jaxlib/__init__.py": ""}, ["depstand"]).name: "2025-01-01T08:00:00Z",
        write_wheel(dist, "depstand", "1.0", {"depstand/__init__.py": ""}).name: "2023-01-01T08:00:00Z",
        write_wheel(dist, "depstand", "2.0", {"depstand/__init__.py": ""}).name: "2024-03-01T08:00:00Z",
    }

    def page(project: str) -> bytes | None:
        files = [{"filename": name, "url": f"../../files/{name}", "hashes": {}, "requires-python": ">=3.8",
                  "upload-time": when, "core-metadata": True}
                 for name, when in uploaded.items() if name.split("-")[0] == project]
        return json.dumps({"meta": {"api-version": "1.1"}, "name": project, "files": files}).encode() if files else None

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            parts = self.path.strip("/").split("/")
            body, kind = None, "application/octet-stream"
            if parts[0] == "simple" and len(parts) == 2:
                body, kind = page(parts[1]), "application/vnd.pypi.simple.v1+json"
            elif parts[0] == "files" and parts[-1].endswith(".metadata") and (dist / parts[-1][:-9]).is_file():
                with zipfile.ZipFile(dist / parts[-1][:-9]) as z:
                    body = z.read(next(n for n in z.namelist() if n.endswith("/METADATA")))
            elif parts[0] == "files" and (dist / parts[-1]).is_file():
                body = (dist / parts[-1]).read_bytes()
            if body is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()


def installed(cache: Path, project: str) -> list[str]:
    """The versions of ``project`` in the environments under ``cache`` (their dist-info folders)."""
    return sorted(p.name.removesuffix(".dist-info").split("-")[1]
                  for p in cache.glob(f"*/lib/python*/site-packages/{project}-*.dist-info"))


def test_by_default_each_release_gets_the_dependencies_of_its_day(dated_index, bench, tmp_path, capsys):
    base = ["releases", "--from", "0.7.0", "--to", "0.7.0", "--index-url", dated_index, "--bench-cmd",
            "python bench.py", "--bench-cwd", str(bench), "--metric-regex", REGEX, "--lower-is-better",
            "--env", f"RUNS_FILE={tmp_path / 'runs.txt'}", "--workdir", str(tmp_path / "work"), "--json"]
    assert main(base + ["--cache-dir", str(tmp_path / "as-of")]) == 0, capsys.readouterr().err
    assert [p["status"] for p in json.loads(capsys.readouterr().out)["points"]] == ["ok"]
    assert installed(tmp_path / "as-of", "depstand") == ["1.0"]   # 2.0 came a year after the release
    assert installed(tmp_path / "as-of", "jaxlib") == ["0.7.0"]   # uploaded again since: still installed
    assert main(base + ["--cache-dir", str(tmp_path / "today"), "--deps-today"]) == 0, capsys.readouterr().err
    assert installed(tmp_path / "today", "depstand") == ["2.0"]
    assert runs(tmp_path) == ["0.7.0", "0.7.0"]
    capsys.readouterr()


def test_without_uv_the_error_is_one_line_with_the_fix(drift_dir, bench, tmp_path):
    """hourly run by a Python whose environment has no uv, and no uv on PATH."""
    import shutil

    from hourly.adapters.venvs import overlay_env
    path = "/usr/bin:/bin"
    if shutil.which("uv", path=path):
        pytest.skip("a uv is installed system-wide")
    py = overlay_env(tmp_path / "no-uv", sys.executable, tmp_path / "overlay.log")
    env = {**os.environ, "PATH": path}
    res = subprocess.run([py, "-m", "hourly", *args(drift_dir, bench, tmp_path, "0.8.0", "0.8.0")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "uv" in lines[0] and "pip install uv" in lines[0] and "--deps-today" in lines[0]
    res = subprocess.run([py, "-m", "hourly", *args(drift_dir, bench, tmp_path, "0.8.0", "0.8.0", "--deps-today",
                                                    "--json")], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr
    assert [(p["status"], p["installer"]) for p in json.loads(res.stdout)["points"]] == [("ok", "pip")]


# -- issue 33 item 2: two steps in four releases -------------------------------------------------

def _four_releases(tmp_path, runs: int) -> Path:
    """Releases 0.4.1-0.4.4 valued 100, 80, 80, 60, each measured ``runs`` times (±0 %)."""
    s = R.ReleaseSettings("0.4.1", "0.4.4", bench_cmd="python3 bench.py", workdir=str(tmp_path / "work"))
    store = Store(tmp_path / "work")
    store.save_settings(R.LEVEL, {"settings": s.as_dict(), "key": "k"})
    for i, v in enumerate([100.0, 80.0, 80.0, 60.0], 1):
        store.add_release("k", ReleasePoint(f"0.4.{i}", f"0.4.{i}", f"2023-0{i}-10T12:00:00Z", Status.OK, v, [v] * runs))
    store.close()
    return tmp_path / "work"


def test_four_single_run_releases_with_two_steps_are_too_few_to_tell(tmp_path, capsys):
    """One value per release, 100, 80, 80, 60: the noise read from the differences (14.9 %) is the
    steps; never "no steps found", but exit 1 with the command that measures each release 3 times."""
    work = _four_releases(tmp_path, runs=1)
    assert main(["releases", "--show", "--workdir", str(work)]) == 1
    out, err = capsys.readouterr()
    assert "no step" not in out and "too few releases to tell noise from steps" in out
    assert "hourly releases --from 0.4.1 --to 0.4.4" in err and "--repeats 3" in err and "--rerun" in err
    assert main(["releases", "--show", "--json", "--workdir", str(work)]) == 1
    got = json.loads(capsys.readouterr().out)
    assert got["steps"] == [] and got["summary"].startswith("too few releases")


def test_four_repeated_releases_with_two_steps_find_both(tmp_path, capsys):
    work = _four_releases(tmp_path, runs=3)
    assert main(["releases", "--show", "--json", "--workdir", str(work)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(st["last_good"]["version"], st["first_bad"]["version"]) for st in got["steps"]] == [
        ("0.4.1", "0.4.2"), ("0.4.3", "0.4.4")]
    assert got["undecided"] is None


def test_a_benchmark_that_exits_3_on_its_own_is_not_told_to_pin_numpy(drift_dir, tmp_path, capsys):
    """issue 33: every release's run ended with the benchmark's own `sys.exit(3)` (no Python error),
    and the fix said "pin what the cause names with --with (e.g. --with 'numpy<2')"; it now says
    that the benchmark itself exits 3 and how to run it by hand in one release's environment."""
    own = tmp_path / "own"
    own.mkdir()
    (own / "bench.py").write_text("import sys\nprint('input file missing, giving up')\nsys.exit(3)\n")
    code = main(args(drift_dir, own, tmp_path, "0.8.0", "0.8.2"))
    err = capsys.readouterr().err
    line = _error_line(err)
    assert code == 1 and "numpy" not in line and "--with" not in line, line
    assert "exit code 3" in line and "input file missing, giving up" in line
    assert "the benchmark itself" in line and "/bin:$PATH python bench.py" in line and str(own) in line


def _noisy_releases(tmp_path, noise: float) -> Path:
    """Releases 0.4.1-0.4.8 of one level, three runs each with ±``noise`` (seeded)."""
    import numpy as np
    s = R.ReleaseSettings("0.4.1", "0.4.8", bench_cmd="python3 bench.py", workdir=str(tmp_path / "work"))
    store = Store(tmp_path / "work")
    store.save_settings(R.LEVEL, {"settings": s.as_dict(), "key": "k"})
    rng = np.random.default_rng(7)
    for i in range(1, 9):
        runs = [float(v) for v in 100.0 * (1 + noise * rng.standard_normal(3))]
        store.add_release("k", ReleasePoint(f"0.4.{i}", f"0.4.{i}", f"2023-0{i}-10T12:00:00Z", Status.OK,
                                            float(np.median(runs)), runs))
    store.close()
    return tmp_path / "work"


def test_releases_too_noisy_to_show_a_1_percent_step_are_no_all_clear(tmp_path, capsys):
    """±6 % a run over eight releases: "no steps found", exit 0, said more than the runs could. Now
    the smallest step that could show, exit 1, and the command at the repeats that show 1 %."""
    work = _noisy_releases(tmp_path, 0.06)
    assert main(["releases", "--show", "--workdir", str(work)]) == 1
    out, err = capsys.readouterr()
    assert "no steps found" not in out and "no step of " in out and "cannot be told from the noise (8 releases" in out
    assert "hourly releases --from 0.4.1 --to 0.4.8" in err and "--rerun" in err and "measure each release" in err
    assert main(["releases", "--show", "--json", "--workdir", str(work)]) == 1
    assert json.loads(capsys.readouterr().out)["summary"].startswith("no step of ")
    # the last release without a measurement: the gap named, no all-clear for the rest (it said "no
    # step among the 7 measured releases; no measurement for jax 0.4.8", exit 0)
    store = Store(work)
    store.add_release("k", ReleasePoint("0.4.8", "0.4.8", "2023-08-10T12:00:00Z", Status.MISSING, None, []))
    store.close()
    assert main(["releases", "--show", "--workdir", str(work)]) == 1
    out, err = capsys.readouterr()
    assert "no step of " in out and "no measurement for jax 0.4.8" in out and "--rerun" in err
    quiet = _noisy_releases(tmp_path / "quiet", 0.001)
    assert main(["releases", "--show", "--workdir", str(quiet)]) == 0
    assert "no steps found" in capsys.readouterr().out
