"""Each option is checked once: by the ``Rule`` declared with it in hourly/options.py, whether its
value comes from a flag, the settings file, a stored scan or a caller; and its default lives in
that declaration alone, never restated in a command's signature."""

from __future__ import annotations

import pytest

from hourly import options
from hourly.errors import UsageError, UserError
from hourly.measure.settings import RULED, effective


@pytest.mark.parametrize("name,bad", [
    ("repeats", 0), ("repeats", True), ("repeats", "3"), ("warmup_runs", -1), ("bench_timeout", -5.0),
    ("build_timeout", 0), ("metric_samples", "some"), ("warmup_samples", -1), ("pairing", "never"),
    ("only", "neither"), ("mode", "printed"), ("step", "often"), ("tz", "Mars/Olympus"),
    ("env", ["=x"]), ("xla_repo", ""),
])
def test_a_value_is_refused_by_its_options_rule_in_the_same_words_from_anywhere(name, bad):
    """A stored scan's value (the base a later command reads) and a caller's flag meet the option's
    rule, and are refused in the words the command line's check uses: one check, not a second one
    in the settings with words of its own."""
    refused = options.option("scan", name).refusal(bad)
    assert refused is not None
    with pytest.raises(UserError) as stored:
        effective({}, base={name: bad})
    assert not isinstance(stored.value, UsageError)  # not the command line's: exit 1
    assert (stored.value.message, stored.value.fix) == refused
    with pytest.raises(UsageError) as flag:
        effective({name: bad})
    assert (flag.value.message, flag.value.fix) == refused


def test_every_scan_setting_with_a_rule_is_checked_by_it():
    ruled = {o.name for o in options.options_of("scan") if o.rule is not None}
    from hourly.measure.settings import FIELD_NAMES
    assert set(RULED) == ruled & FIELD_NAMES
    assert {"repeats", "warmup_runs", "bench_timeout", "build_timeout", "metric_samples", "warmup_samples", "mode",
            "pairing", "only"} <= set(RULED)


def _commands():
    """Every command function, as hourly.cli registers them (the wrapper; ``__wrapped__`` is the
    function as written)."""
    import importlib
    import pkgutil

    import hourly.commands
    found = {}
    for mod in pkgutil.iter_modules(hourly.commands.__path__):
        module = importlib.import_module(f"hourly.commands.{mod.name}")
        for value in vars(module).values():
            if callable(value) and getattr(value, "command_name", None):
                found[value.command_name] = value
    return found


def test_no_command_restates_an_options_default():
    """The default a command gets is its option's declaration (hourly.options), once: the function's
    own parameters for options are keyword-only and have none."""
    import inspect
    commands = _commands()
    assert set(commands) == set(options.TAKES)
    for name, fn in commands.items():
        for p in inspect.signature(fn.__wrapped__).parameters.values():
            if p.name in options.TAKES[name] or p.name == "flags":
                assert p.kind is inspect.Parameter.KEYWORD_ONLY, (name, p.name)
                assert p.default is inspect.Parameter.empty, f"hourly {name}: {p.name} = {p.default!r}"


def test_a_command_that_restates_a_default_is_refused_when_hourly_starts():
    from hourly.commands.common import command

    def clean(json_out: bool = False) -> None:  # the option's own default, written again
        pass
    with pytest.raises(TypeError, match=r"\['json_out'\] restate a default"):
        command("clean")(clean)



def test_which_option_gives_which_level_setting_of_a_watch_is_declared_with_the_options():
    from dataclasses import fields

    from hourly.measure.settings import Settings
    from hourly.nightly.plan import NightlySettings
    from hourly.releases.plan import ReleaseSettings
    levels = {"containers": NightlySettings, "wheels": ReleaseSettings, "commits": Settings}
    assert set(options.WATCH_LEVELS) == set(levels)
    for source, mapping in options.WATCH_LEVELS.items():
        assert set(mapping) <= set(options.TAKES["watch"]), source
        assert set(mapping.values()) <= {f.name for f in fields(levels[source])}, source


@pytest.mark.parametrize("source,timeout,cache", [("containers", "timeout", None), ("wheels", "timeout", "cache_dir"),
                                                  ("commits", "bench_timeout", None)])
def test_a_watchs_options_reach_its_levels_settings_by_the_declaration(tmp_path, source, timeout, cache):
    from hourly.commands.watch import _settings
    given = {o.name: o.default for o in options.options_of("watch")}
    given.update(source=source, timeout=30.0, mount=[f"{tmp_path}:/data"], env=["A=1"], samples=5,
                 bench_cmd="python3 b.py", find_links=str(tmp_path), release_cache_dir=str(tmp_path / "envs"),
                 xla_repo=str(tmp_path / "xla"), jax_repo=str(tmp_path / "jax"), higher_is_better=False)
    w = _settings(given, str(tmp_path / "w"), None)
    assert w.level[timeout] == 30.0 and w.level["env"] == ["A=1", "HOURLY_SAMPLES=5"]
    assert w.level["higher_is_better"] is False and w.level["workdir"] == str(tmp_path / "w")
    if source == "containers":
        assert w.level["mounts"] == [f"{tmp_path}:/data"]
    if cache:
        assert w.level[cache] == str(tmp_path / "envs")


@pytest.mark.parametrize("level,field,command,name,bad", [
    ("nightly", "repeats", "nightly", "repeats", 0), ("nightly", "every", "nightly", "every", 0),
    ("nightly", "parallel", "nightly", "parallel", 0), ("nightly", "timeout", "nightly", "timeout", -1.0),
    ("nightly", "metric_samples", "nightly", "metric_samples", "some"),
    ("nightly", "warmup_samples", "nightly", "warmup_samples", -1),
    ("releases", "repeats", "releases", "repeats", 0), ("releases", "timeout", "releases", "bench_timeout", 0.0),
    ("releases", "metric_samples", "releases", "metric_samples", "some"),
    ("releases", "warmup_samples", "releases", "warmup_samples", -1),
])
def test_a_levels_settings_are_checked_by_the_options_rules(tmp_path, level, field, command, name, bad):
    """The daily and the release level check their settings (a stored watch's, a hunt's) with the
    rules of the options that set them, in the command line's words."""
    import dataclasses

    from hourly.nightly.plan import NightlySettings
    from hourly.releases.plan import ReleaseSettings
    s = (NightlySettings(from_="2023-08-20", to="2023-08-21", gpus="none", workdir=str(tmp_path)) if level == "nightly"
         else ReleaseSettings(from_="0.4.1", to="0.4.2", bench_cmd="python3 b.py", find_links=str(tmp_path),
                              workdir=str(tmp_path)))
    with pytest.raises(UserError) as e:
        dataclasses.replace(s, **{field: bad}).validate()
    assert (e.value.message, e.value.fix) == options.option(command, name).refusal(bad)
