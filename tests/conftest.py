"""Shared fixtures: real stand-in repositories, builds and benchmarks (see hourly.demo.repos)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import site
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import hourly

if sys.dont_write_bytecode and sys.pycache_prefix is None:
    # PYTHONDONTWRITEBYTECODE (set on some machines, this project's among them) makes pytest rewrite
    # the asserts of every test file again in every test process, ~5 s of each worker's collection.
    # This process alone keeps its bytecode where pytest keeps its cache, never in the tree; the
    # processes the tests start are left as they are.
    sys.pycache_prefix = str(Path(__file__).resolve().parent.parent / ".pytest_cache" / "pycache")
    sys.dont_write_bytecode = False

from hourly.demo.repos import DEMO_CHANGES, Made, make_repos
from tests.argv import with_flags


def pytest_configure(config):
    if sys.flags.dont_write_bytecode and not hasattr(config, "workerinput"):
        # and the ~60 `python -m hourly` processes the tests start would each compile the package
        # again (~0.25 s of CPU a process): compiled once here, before the workers start, into its
        # own __pycache__ (ignored by git), as pip compiles what it installs
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(hourly.__file__).parent)],
                       check=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPYCACHEPREFIX"})


def copy_tree(src: str | Path, dest: str | Path) -> Path:
    """A copy of the folder ``src`` (git repositories and what else a maker of them wrote) at
    ``dest``, with every absolute path under ``src`` that a file holds (a clone's ``origin`` URL
    and reflog, a build script's checkout) rewritten to the copy's own; git's object files are
    hard links (git never changes one in place). Returns ``dest``, absolute."""
    src, dest = Path(src).absolute(), Path(dest).absolute()

    def link_objects(a: str, b: str) -> None:
        # git writes an object once and never in place (new ones are new files, gc unlinks): a
        # hard link is a copy that cannot change under either side
        if f"{os.sep}.git{os.sep}objects{os.sep}" in a:
            os.link(a, b)
        else:
            shutil.copy2(a, b)
    shutil.copytree(src, dest, symlinks=True, copy_function=link_objects)
    old, new = str(src).encode(), str(dest).encode()
    for dirpath, dirnames, filenames in os.walk(dest):
        if os.path.basename(dirpath) == ".git" and "objects" in dirnames:
            dirnames.remove("objects")  # zlib-compressed, and no object holds a path
        for name in filenames:
            f = Path(dirpath) / name
            data = f.read_bytes()
            if old in data:
                f.write_bytes(data.replace(old, new))
    return dest


def copy_repos(src: Made, dest: str | Path) -> Made:
    """A copy of repositories made by ``make_repos``, at ``dest``, as if made there.

    Same commits (make_repos fixes every date and author, so its shas do not depend on where it
    runs), and every absolute path the original wrote (each clone's ``origin`` URL and reflog,
    the build script's XLA checkout) rewritten to the copy's own. Several times cheaper than
    making them again (``benchmarks/suite_time.py --fixtures``); the copy shares nothing that
    either side can change (git's immutable object files are hard links), so a test may mutate
    its copy freely: commit, reset, edit, break the build."""
    dest = copy_tree(src.root, dest)

    def moved(p: Path) -> Path:
        return dest / Path(p).relative_to(src.root)
    return dataclasses.replace(src, root=dest, xla=moved(src.xla), jax=moved(src.jax),
                               upstream={k: moved(v) for k, v in src.upstream.items()},
                               shas=dict(src.shas), branch_shas=dict(src.branch_shas),
                               build_script=moved(src.build_script), bench_script=moved(src.bench_script))


@pytest.fixture(scope="session")
def repos_cache(tmp_path_factory):
    """``repos_cache(dest, changes, start=..., base=...)``: ``make_repos``'s result at ``dest``,
    copied from a pristine set made once per test process for each distinct history."""
    made: dict[str, Made] = {}
    root = tmp_path_factory.mktemp("pristine-repos")

    def get(dest, changes, start: str | None = None, base: dict | None = None) -> Made:
        key = repr((list(changes), start, base))
        if key not in made:
            kw = {"start": start} if start is not None else {}
            made[key] = make_repos(root / str(len(made)), changes, base=base, **kw)
        return copy_repos(made[key], dest)
    return get


@pytest.fixture(scope="session")
def _pristine(repos_cache, tmp_path_factory):
    """The demo's repositories, made once per test process; tests get their own copies."""
    return repos_cache(tmp_path_factory.mktemp("pristine") / "repos", DEMO_CHANGES)


@pytest.fixture
def made(_pristine, tmp_path):
    """Fresh real repositories with the demo's history: a copy of ``_pristine`` at
    ``tmp_path / "repos"`` (the test's own, to mutate as it likes)."""
    return copy_repos(_pristine, tmp_path / "repos")


def make_venv_seeing_this_python(path) -> str:
    """A venv whose own site-packages come first, then those of the Python running the tests.

    ``system_site_packages=True`` is not that when the tests run in a venv themselves: it
    reaches the *base* interpreter's site-packages, where jax (or anything the suite installed)
    is not. A ``.pth`` line that calls ``site.addsitedir`` on the running interpreter's
    site-packages and hourly's own source folder adds them as plain path lines: their ``.pth`` files
    are not processed, so each of the thousands of processes the tests start (benchmarks, builds)
    does not pay the ~17 ms of an editable install's import finder (20 of its 30 ms start-up)."""
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(path)
    python = str(path / "bin" / "python")
    own = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    dirs = [d for d in site.getsitepackages() if os.path.isdir(d)]
    source = Path(path) / "hourly-source"  # the package alone, as the editable install shows it
    source.mkdir()
    (source / "hourly").symlink_to(Path(hourly.__file__).resolve().parent)
    (Path(own) / "_running_python.pth").write_text("".join(f"{d}\n" for d in [*dirs, str(source)]))
    return python


@pytest.fixture(scope="session")
def venv_python(tmp_path_factory) -> str:
    """A virtual environment that receives the builds (never the test runner's own Python), and
    sees the packages of the Python running the tests (jax, for the profile test)."""
    return make_venv_seeing_this_python(tmp_path_factory.mktemp("venv"))


@pytest.fixture
def scan_args(made, venv_python, tmp_path):
    """Arguments of a scan over the demo repos; narrow windows keep tests fast. A flag of ``extra``
    that the defaults have replaces the default's value (hourly refuses a flag given twice:
    tests/argv.py)."""
    def make(frm="Aug 24 2023 12:00", to="Aug 24 2023 15:00", *extra):
        return with_flags(["scan", "--from", frm, "--to", to, "--xla-repo", str(made.xla), "--jax-repo", str(made.jax),
                           "--build-cmd", str(made.build_script), "--python", venv_python,
                           "--bench-cmd", f"python3 {made.bench_script}", "--workdir", str(tmp_path / "work")],
                          *extra)
    return make


@pytest.fixture(autouse=True)
def _no_user_config(tmp_path, monkeypatch):
    """Run each test in its own directory so no ./hourly.toml leaks in; crash logs and the build cache
    stay there."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOURLY_LOG_DIR", str(tmp_path / "crash-logs"))
    monkeypatch.setenv("HOURLY_CACHE_DIR", str(tmp_path / "cache"))  # never the real ~/.cache/hourly
    monkeypatch.setenv("DEMO_NOISE", os.environ.get("DEMO_NOISE", "0.002"))


# -- which tests are slow ---------------------------------------------------------------------
#
# `python -m pytest -m "not slow"` is the contributor's quick run (CONTRIBUTING.md, "Run the
# tests"): every unit of logic, without the end-to-end runs that repeat it at length. CI runs
# everything. A test is slow when it needs a Docker engine or a Slurm cluster (below, from its
# fixtures), carries ``@pytest.mark.slow``, or is named here: end-to-end runs (whole hunts,
# demos, real jax lowering, signals sent to a running scan) whose logic a quicker test of the
# same file or of its module covers. Listed here rather than decorated in place so that branches
# editing those files merge without conflict; a name that matches nothing is an error (below).
SLOW: dict[str, tuple[str, ...]] = {
    # signals sent to a running scan (processes waiting on a slowed benchmark); the stop-signal
    # logic: test_cli_edges' fork-callback test; resuming: the rerun tests of test_scan (kill -9:
    # test_faults' seeded kill chain)
    "test_scan.py": ("test_sigterm_and_sighup_stop_like_ctrl_c", "test_ctrl_c_exits_130_restores_trees_and_prints_resume_command",
                     "test_an_interrupted_scan_is_incomplete_in_show_json_bisect_and_report_until_resumed",
                     # re-measured edges and warm-up runs: test_detect's and test_bench's units
                     "test_an_edge_step_that_was_one_slow_run_is_called_an_outlier",
                     "test_the_warm_up_run_hides_a_slow_first_run"),
    # real jax lowering of every state (HLO dumps, pass sweeps, reverts, the sweep on the wall
    # clock); the diff itself: the hlo_diff tests at the top of the file; the whole explain of a
    # bisected workdir (dumps, diff, op times, repro): the no-scan test, which stays quick
    "test_explain.py": ("test_explain_names_the_changed_instructions_and_writes_a_repro",
                        "test_bisect_explain_adds_the_explanation_to_the_answer",
                        "test_the_sweep_finds_the_disabled_pass_that_restores_the_level",
                        "test_the_sweep_measures_each_differing_pass_and_every_try_flag_and_a_clean_revert_restores",
                        "test_a_conflicting_revert_is_said",
                        # by exit status: the failing state's output and no dump, the quick
                        # test_a_culprit_that_fails_before_compiling_is_explained_by_its_output
                        "test_a_golden_test_culprit_is_explained_by_its_programs_and_both_outputs",
                        # traced dump runs after plain ones: the no-scan test's traced dumps and
                        # the quick exit-status test's plain ones
                        "test_a_failure_the_dump_runs_do_not_show_is_said_and_both_states_are_timed"),
    # two real scans racing for one Python; the lock logic: test_faults' lock tests
    "test_identity.py": ("test_two_runs_with_one_python_exclude_each_other",),
    # the whole demo (CI's quick start runs it too); a scan of the same history: test_scan
    "test_report.py": ("test_demo_finds_every_planted_change",),
    "test_cli_edges.py": ("test_demo_without_a_folder_says_where_it_kept_its_temporary_folder",),
    # bisections under heavy planted noise, the runs of many scans and
    # bisections in one test, and every bisection whose logic tests/test_drive.py runs over a
    # table of evidence on exhaustive histories (two steps, build failures, skips, mixed pairs and
    # blame, the rest of a window, the second step's blame); the search maths: test_bisect_math.
    # The quick run keeps one end-to-end bisection per piece of wiring: --retry-failed,
    # cherry-picks, an unconfirmed candidate's exit 4, an end that fails to build (the replayable
    # exit-mode log, the recorded build failure and the crash window are decorated slow in
    # test_bisect.py, each with the quick tests that cover it)
    "test_bisect.py": ("test_a_small_step_after_a_large_one_under_noise",
                       "test_build_failure_next_to_the_culprit",
                       "test_skips_that_hide_the_culprit_give_the_smallest_range",
                       "test_exit_mode_log_with_a_skipped_range",
                       "test_a_step_moving_both_repos_is_blamed_by_the_mixed_pairs",
                       "test_exit_mode_probes_the_mixed_state_of_a_step_moving_both_repos_and_blame_reuses_it",
                       "test_exit_mode_blames_an_xla_commit_of_a_step_moving_both_repos_from_the_chain",
                       "test_a_rest_of_the_window_that_names_nothing_is_said_not_dropped",
                       "test_a_slow_first_run_per_install_and_heavy_tails_still_name_the_culprit",
                       "test_every_regression_of_a_scan_is_bisected_to_its_commit",
                       "test_a_bisection_never_changes_the_scans_numbers",
                       "test_plain_bisect_answers_a_regression_and_a_crash_window_each_in_its_mode",
                       "test_find_fix_names_the_improvement_and_the_fix",
                       "test_a_metric_that_stops_printing_is_a_window_found_reported_and_bisected",
                       "test_a_regression_an_improvement_and_a_regression",
                       "test_a_flaky_crash_is_named_by_its_failure_rate"),
    # rounds of W states end to end; the rounds' logic: test_bisect_math, test_round_planner, and
    # tests/test_drive.py (exit mode in rounds against the sequential search, every culprit position)
    "test_bisect_rounds.py": ("test_four_workers_find_the_same_two_culprits_in_fewer_rounds",
                              "test_exit_mode_in_rounds_names_the_crash_like_the_sequential_one"),
    # a manual bisection at a terminal: Ctrl-C then kill -9 at the prompt, resumed to the culprit,
    # stays quick (the plain one at a prompt is decorated slow in test_manual.py); an unknown word and unsure, and hourly mark from a second process: their
    # logic in tests/test_drive.py (the manual judge over a table, the Person's prompt and hourly
    # mark on a real store, the report of a manual answer)
    "test_manual.py": ("test_unsure_and_a_word_that_is_no_verdict",
                       "test_hourly_mark_from_a_second_process_answers_the_waiting_bisection"),
    # a whole jax-only hunt; its parts: the other tests of test_only
    "test_only.py": ("test_jax_only_hunt_with_the_installed_jaxlib_finds_the_culprit",),
    # processes killed at seeded moments, again and again
    "test_faults.py": ("test_a_scan_killed_at_seeded_moments_again_and_again_loses_and_redoes_nothing",
                       "test_a_bisection_killed_at_seeded_moments_again_and_again_continues_to_the_same_culprit"),
    "test_releases.py": ("test_kill_9_then_rerun_does_not_redo_finished_releases",),
    # a watch killed -9 while confirming; resuming a check from its stored pairs: the commit watch of the
    # same file, whose second run with the same night measures nothing again
    "test_watch.py": ("test_a_watch_killed_while_confirming_goes_on_with_the_pairs_it_stored",),
    # hourly shell --only jax in a subprocess over a read-only host; the overlay's activation: the
    # bisection over the same host (the benchmark's environment), the shell's wiring: test_manual
    "test_host_overlay.py": ("test_hourly_shell_at_a_jax_state_runs_that_jax_over_the_hosts_pythonpath",
                             "test_pip_carried_at_the_end_of_pythonpath_builds_and_installs_each_state"),
}

#: fixtures that reach a Docker engine or a Slurm cluster: every test that uses one is slow
ENGINES = ("docker_client", "_cluster")


def pytest_collection_modifyitems(config, items):
    named = {(f, n) for f, names in SLOW.items() for n in names}
    missing: set[str] = set()
    checked: set[str] = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is not None and item.path.name not in checked:
            checked.add(item.path.name)
            missing |= {f"{item.path.name}::{n}" for n in SLOW.get(item.path.name, ()) if not hasattr(module, n)}
        key = (item.path.name, getattr(item, "originalname", item.name))
        engine = set(getattr(item, "fixturenames", ())) & set(ENGINES)
        if key in named or engine or item.get_closest_marker("docker"):
            item.add_marker(pytest.mark.slow)
    if missing:  # a renamed test would silently join the quick run
        raise pytest.UsageError(f"tests/conftest.py SLOW names tests that do not exist: {sorted(missing)}")


# -- the order the files run in ------------------------------------------------------------------
#
# CI runs the files on two workers, each file on one (``--dist loadfile``), handing out the next file
# to whichever worker is nearly done. xdist's own order is by number of tests, fewest last: the
# heavy end-to-end files with a handful of tests (the Docker hunts and watches, the profile, the
# identity races) came last, and one worker ran them alone while the other sat idle. Heaviest
# first instead (``--no-loadscope-reorder`` keeps the order made here): the last files handed out
# are the light ones, so the two workers end together. The weights are each file's seconds of test
# time run alone, from ``python benchmarks/suite_time.py --per-file --write-durations``.

DURATIONS = Path(__file__).with_name("durations.json")

#: seconds per test assumed for a file that durations.json does not know yet (a new file)
UNKNOWN_TEST_S = 1.0


def file_weights(selected: dict[str, tuple[int, int]], durations: dict[str, dict]) -> dict[str, float]:
    """Each file's expected seconds for the tests selected from it: ``selected`` maps a file to its
    (quick, slow) tests selected; ``durations`` maps it to its recorded ``quick_s``, ``slow_s`` and
    the numbers of tests they took (``quick``, ``slow``). A share of a file's tests (``-m "not
    slow"``, ``-k``) weighs its share of the seconds; a file not recorded, ``UNKNOWN_TEST_S`` a test."""
    weights = {}
    for name, (quick, slow) in selected.items():
        d = durations.get(name)
        if d is None:
            weights[name] = UNKNOWN_TEST_S * (quick + slow)
            continue
        weights[name] = (d["quick_s"] * quick / max(d["quick"], 1)) + (d["slow_s"] * slow / max(d["slow"], 1))
    return weights


def heaviest_first(items: list, weights: dict[str, float]) -> list:
    """``items`` with the files in decreasing weight; a file's tests stay together, in their order."""
    first = {}
    for i, item in enumerate(items):
        first.setdefault(item.path.name, i)
    return sorted(items, key=lambda it: (-weights.get(it.path.name, 0.0), first[it.path.name]))


# trylast: after -m and -k have deselected, weigh what runs
@pytest.hookimpl(trylast=True, specname="pytest_collection_modifyitems")
def pytest_collection_modifyitems_heaviest_first(items):
    if not items:
        return
    try:
        durations = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        durations = {}
    selected: dict[str, tuple[int, int]] = {}
    for item in items:
        quick, slow = selected.get(item.path.name, (0, 0))
        is_slow = item.get_closest_marker("slow") is not None
        selected[item.path.name] = (quick + (not is_slow), slow + is_slow)
    items[:] = heaviest_first(items, file_weights(selected, durations))
