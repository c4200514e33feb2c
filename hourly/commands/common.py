"""What every command shares: its options made from hourly.options (where each is declared once),
the checks of what the command line and the settings file give them, and the consoles.

A command is a function whose parameters are named after options: :func:`command` gives it the
options :data:`hourly.options.TAKES` lists for it, as typer options in that order (a parameter the
table does not list is an error when hourly starts). Options it does not name itself reach it as
one dict, ``flags`` (the scan-shaped settings, which :func:`hourly.measure.settings.effective`
layers over defaults, the settings file and a stored scan's settings; the executor's, which
:func:`hourly.execute.executors.make_executor` reads). Before the command runs, every value given
on the command line is checked against its option (a usage error, exit 2), a single-valued flag
given twice is refused, and the command's own table of the settings file (``[bisect]``, ...) gives
the options the command line left out.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from enum import Enum
from typing import TYPE_CHECKING, Any, Callable, List, Optional, TypeVar

import typer
from typer.core import TyperCommand

from hourly import options
from hourly.errors import UsageError
from hourly.options import WARN_INSTANTS, Option
from hourly.render.console import console as make_console
from hourly.text.privacy import REDACTED, pasted_secret, redact_word

if TYPE_CHECKING:
    from hourly.nightly.plan import NightlySettings

# text from outside is printed verbatim, tables never cut a cell: see hourly/render/console.py
console = make_console()
err_console = make_console(stderr=True)


@dataclasses.dataclass(frozen=True)
class StoredAtStop:
    """What a command had stored, not yet printed, when Ctrl-C or a stop signal came (a bisection's
    answers): the top-level handler (hourly.cli.main) prints ``said`` and the command line that
    prints it, the one given less ``leave_out`` (``--rerun`` would do the work again), instead of
    the line that resumes a run cut short; the exit status stays 130, or 128 + the signal."""

    said: str
    leave_out: tuple[str, ...] = ()


#: the running command's :class:`StoredAtStop`, once a stop came after it had stored what it was
#: run for: set by the command as the stop passes, read (and cleared for the next) by hourly.cli.main
stored_at_stop: list[StoredAtStop] = []


def typer_option(opt: Option) -> tuple[Any, Any]:
    """The annotation and the typer option of ``opt`` (as one command reads it)."""
    t = opt.type
    if t is list:
        annotation: Any = Optional[List[str]]
    else:
        annotation = t if opt.default is not None else Optional[t]
    bounds = f"  [{opt.rule.bounds}]" if opt.rule and opt.rule.bounds else ""
    # an enum whose rule takes some of its members (scan's --mode: not bisect's printed) lists those
    words = opt.rule.words if opt.rule and isinstance(t, type) and issubclass(t, Enum) else ()
    return annotation, typer.Option(opt.default, f"{opt.flag}/{opt.off}" if opt.off else opt.flag,
                                    help=opt.help + bounds, metavar=f"<{'|'.join(words)}>" if words else None)


def shared_direction(given: Optional[bool], config: Optional[str]) -> bool:
    """The metric's direction: --higher-is-better/--lower-is-better as given, else the settings
    file's ``higher_is_better`` (its top level or [scan]), else higher."""
    if given is not None:
        return given
    from hourly.measure.settings import effective
    return effective({}, config)[0].higher_is_better


R = TypeVar("R")


def with_progress(run: Callable[[Any], R], json_out: bool, unit: str, describe: Callable[[Any], str]) -> R:
    """``run(handler)`` with a progress bar (or plain lines) on stderr; with --json none is drawn
    (the silent handler), so stdout holds the JSON alone."""
    from hourly.events import SILENT
    if json_out:
        return run(SILENT)
    from hourly.commands.progress import ProgressLines
    with ProgressLines(err_console, unit, describe) as handler:
        return run(handler)


def print_level_report(report: Any, json_out: bool, print_report: Callable[[Any, Any], None]) -> None:
    """A level's report: its JSON (``report.as_json()``) with --json, else its rendering."""
    if json_out:
        import json
        print(json.dumps(report.as_json(), indent=1))
    else:
        print_report(console, report)


def with_samples(env: Optional[List[str]], samples: Optional[int]) -> list[str]:
    """``--env`` with ``--samples N`` as the ``HOURLY_SAMPLES=N`` it sets (the levels that do not
    choose the count: watch, releases, nightly); both given: a usage error, they would disagree."""
    out = list(env or [])
    if samples is None:
        return out
    from hourly.measure.sample_cost import SAMPLES_VAR
    if any(e.split("=", 1)[0] == SAMPLES_VAR for e in out):
        raise UsageError("--samples and --env HOURLY_SAMPLES both set the samples a process is asked for",
                         "pass one of them")
    return [*out, f"{SAMPLES_VAR}={samples}"]


def daily_settings(flags: dict, from_: str, to: str, workdir: str, rerun: bool,
                   config: Optional[str]) -> NightlySettings:
    """The daily level's settings from DAILY's ``flags``; the direction, when not given, from the
    settings file (hourly.toml), else higher is better."""
    from hourly.nightly.plan import NightlySettings
    f = dict(flags)
    direction = f.pop("higher_is_better")
    s = NightlySettings(from_=from_, to=to, workdir=workdir, rerun=rerun,
                        mounts=list(f.pop("mount") or []), env=list(f.pop("env") or []),
                        higher_is_better=shared_direction(direction, config), **f)
    metrics, metric_samples, warmup_samples = read_metrics(s, s.metrics, s.metric_samples, s.warmup_samples)
    return dataclasses.replace(s, metrics=metrics, metric_samples=metric_samples, warmup_samples=warmup_samples)


def read_metrics(s: Any, metrics: Optional[str], metric_samples: Optional[str],
                 warmup_samples: Optional[int]) -> tuple[Optional[str], str, int]:
    """How the daily (or release) level reads a run's output: --metrics (all by itself when the
    benchmark is hourly's per-phase harness and no --metric-regex of its own was given),
    --metric-samples, --warmup-samples."""
    from hourly.measure.settings import is_phase_harness
    from hourly.metric import DEFAULT_METRIC_REGEX
    if metrics is None and s.metric_regex == DEFAULT_METRIC_REGEX and is_phase_harness(s.bench_cmd):
        metrics = "all"
    return metrics, metric_samples or "last", warmup_samples or 0


def require_a_scan(store: Any, command: str, reads_answers: bool = True) -> None:
    """A workdir that another level made (a watch, the daily or the release level; a bisection's,
    for a command that reads no answers) holds no scan for ``command`` to read: a user error naming
    what it holds and the command that reads it, not the missing benchmark or the empty scan a
    command reading a scan would meet there."""
    from hourly.errors import UserError
    from hourly.scan.table import has_scan
    if has_scan(store):
        return
    w = store.workdir
    if store.bisection_answers() or store.unfinished_bisections():
        if reads_answers:
            return
        raise UserError(f"no scan in {w} for hourly {command} to read: it holds a bisection (hourly bisect --good "
                        "--bad)", f"{options.command_line('show', {'workdir': w})} prints its bisections and the "
                        "scan command that measures their window")
    held = (("a watch (hourly watch)", f"{options.command_line('watch', {'show': True, 'workdir': w})} prints it "
             f"(its page: {w / 'watch' / 'index.html'}); each alert's hunt has its workdir under {w / 'hunts'}")
            if store.load_settings("watch") else
            ("the daily level's results (hourly nightly)",
             f"{options.command_line('show', {'nightly': True, 'workdir': w})} prints them")
            if store.load_settings("nightly") else
            ("the release level's results (hourly releases)",
             f"{options.command_line('releases', {'show': True, 'workdir': w})} prints them")
            if store.load_settings("releases") else None)
    if held is not None:
        raise UserError(f"no scan in {w} for hourly {command} to read: it holds {held[0]}", held[1])


def check_plan_size(s: Any, max_instants: int) -> None:
    """Warn (one line on stderr) before a plan of more than WARN_INSTANTS instants; refuse one of
    more than ``max_instants``, before anything is touched. A window that does not parse is left to
    the scan's own checks."""
    if not s.from_ or not s.to:
        return
    from hourly.text.timeparse import instant_count, iso_utc, parse_step, window
    t0, t1 = window(s.from_, s.to, s.tz)
    n = instant_count(t0, t1, parse_step(s.step))  # the window's end is one, on the grid or not
    what = f"the window plans {n:,} instants (every {s.step} from {iso_utc(t0)} to {iso_utc(t1)})"
    if n > max_instants:
        raise UsageError(f"{what}, more than --max-instants {max_instants:,}",
                         f"pass a coarser --step such as 1h, a narrower window, or --max-instants {n} to plan them all")
    if n > WARN_INSTANTS:
        err_console.print(f"hourly: warning: {what}; each distinct (xla, jax) pair among them is built and measured",
                          soft_wrap=True)


# -- help panels ----------------------------------------------------------------------------------
#: each command's --help groups its options in the panels of hourly.options (PANELS, in that order,
#: after "Options": the command's own, and -h); a flag's panel is declared with it, so --bench-cmd is
#: under Benchmark in scan, bisect, nightly and releases alike
PANELS = options.PANELS
OPTIONS_PANEL = options.OPTIONS_PANEL


def panel_of(param: Any) -> str:
    """The help panel of a click parameter: its own ``rich_help_panel``, else its option's."""
    opt = options.BY_FLAG.get(param.opts[0])
    return getattr(param, "rich_help_panel", None) or (opt.panel if opt else OPTIONS_PANEL)


class PanelledCommand(TyperCommand):
    """A command whose plain-text help (``rich_markup_mode=None``: click's formatter, no markup read)
    lists its options in the panels of :data:`PANELS`, one titled section each, aligned alike.

    Typer draws ``rich_help_panel`` only in its rich help, which reads markup; this keeps the help
    plain and still grouped."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        params = self.get_params(ctx)
        refuse_both_sides(params, args)
        refuse_repeated(params, args)
        refuse_redacted(args)
        rest = super().parse_args(ctx, args)
        # which options the command line gave (the settings file gives the others: see command())
        ctx.meta[GIVEN] = {p.name for p in params if p.param_type_name == "option"
                           and getattr(ctx.get_parameter_source(p.name), "name", "") == "COMMANDLINE"}
        return rest

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments: list[tuple[str, str]] = []
        panels: dict[str, list[tuple[str, str]]] = {name: [] for name in (OPTIONS_PANEL, *PANELS)}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append(record)
            else:
                panels.setdefault(panel_of(param), []).append(record)
        rows = arguments + [r for records in panels.values() for r in records]
        width = min(max((len(first) for first, _ in rows), default=0), 30)  # click's col_max
        for title, records in (("Arguments", arguments), *panels.items()):
            if records:
                with formatter.section(title):
                    _write_rows(formatter, records, width)


def refuse_both_sides(params: Any, args: list[str]) -> None:
    """A flag pair given both ways (``--higher-is-better --lower-is-better``) is a usage error; click
    would take the last one silently. Arguments after ``--`` are someone else's."""
    given = set(args[:args.index("--")] if "--" in args else args)
    for param in params:
        on: list[str] = list(getattr(param, "opts", ()))
        off: list[str] = list(getattr(param, "secondary_opts", ()))
        if off and given & set(on) and given & set(off):
            raise UsageError(f"{on[0]} and {off[0]} contradict each other", "pass one of them")


def refuse_redacted(args: list[str]) -> None:
    """A value that assigns a secret the word ``<redacted>`` (a line hourly printed, pasted as it is)
    is a usage error that says how to pass the secret: the benchmark would get the word. Arguments
    after ``--`` are someone else's."""
    words = args[:args.index("--")] if "--" in args else list(args)
    for i, word in enumerate(words):
        name = pasted_secret(word)
        if name is None:
            continue
        if word.startswith("--env=") or (i > 0 and words[i - 1] == "--env"):
            from hourly.adapters.proc import pasted_env
            raise pasted_env(name)
        raise UsageError(f"`{redact_word(word)}` passes the word {REDACTED} where {name}'s value goes: hourly prints "
                         "a secret's value so, never the value itself",
                         f"give {name}'s value there again (export {name}=<its value> and write ${name} for your "
                         "shell to expand)")


def refuse_repeated(params: Any, args: list[str]) -> None:
    """A flag that takes one value given twice (``--python a --python b``) is a usage error; click
    would keep the last one silently. Repeatable flags (``--env``) may be; arguments after ``--``
    are someone else's."""
    words = args[:args.index("--")] if "--" in args else list(args)
    by_flag = {flag: p for p in params if getattr(p, "param_type_name", "") == "option"
               for flag in (*p.opts, *getattr(p, "secondary_opts", ()))}
    seen: dict[str, list[tuple[str, str | None]]] = {}
    i = 0
    while i < len(words):
        flag, eq, value = words[i].partition("=") if words[i].startswith("--") else (words[i], "", "")
        p = by_flag.get(flag)
        i += 1
        if p is None:
            continue
        shown: str | None = None
        if not p.is_flag:
            if not eq and i < len(words):
                value, i = words[i], i + 1
            shown = value
        if not p.multiple:
            seen.setdefault(p.name, []).append((flag, shown))
    for uses in seen.values():
        if len(uses) > 1:
            flag = uses[0][0]
            values = [redact_word(v) for _, v in uses if v is not None]
            said = f" ({', '.join(values)})" if values else ""
            raise UsageError(f"{flag} given {len(uses)} times{said}, but it takes one value",
                             f"pass {flag} once")


def refuse_together(*flags: tuple[str, Any], fix: str) -> None:
    """A usage error when every one of ``flags`` (name, value given or None/False) was given."""
    if all(value not in (None, False) for _, value in flags):
        raise UsageError(f"{' and '.join(name for name, _ in flags)} cannot go together", fix)


def _write_rows(formatter: Any, rows: list[tuple[str, str]], width: int) -> None:
    """click's definition list, but wrapped at spaces only: a flag (``--jax-build-cmd``) or a pattern
    (the metric's default) is never split at a hyphen or cut; a word wider than the column overflows."""
    import textwrap
    indent = " " * formatter.current_indent
    column = width + 2
    text_width = max(formatter.width - formatter.current_indent - column, 10)
    for first, text in rows:
        formatter.write(indent + first)
        lines = textwrap.wrap(text, text_width, break_long_words=False, break_on_hyphens=False)
        if not lines:
            formatter.write("\n")
            continue
        formatter.write(" " * (column - len(first)) if len(first) <= width else "\n" + indent + " " * column)
        formatter.write(lines[0] + "\n")
        for line in lines[1:]:
            formatter.write(indent + " " * column + line + "\n")


#: ctx.meta's entry: the names of the options the command line gave
GIVEN = "hourly.given"
F = TypeVar("F", bound=Callable[..., Any])


def command(name: str) -> Callable[[F], F]:
    """Make ``fn`` the command ``hourly NAME``: its parameters named after options become those
    options (annotation, flag, default, help from hourly.options), in TAKES' order after its
    arguments; the options of TAKES[name] it does not name reach it in ``flags``. Such a parameter
    is keyword-only and has no default of its own (its option's declaration holds it; one restated
    is a TypeError when hourly starts). The wrapper checks
    the values given (exit 2), then fills the options not given from the settings file's table of
    the command (:func:`hourly.measure.settings.load_config`)."""
    takes = options.TAKES[name]

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn, eval_str=True)
        own = sig.parameters
        arguments = [p for p in own.values() if p.name != "flags" and isinstance(p.default, _ARGUMENT)]
        named = {p.name for p in own.values()} - {"flags"} - {p.name for p in arguments}
        stray = named - set(takes)
        if stray:
            raise TypeError(f"hourly {name}: {sorted(stray)} are no options of hourly.options.TAKES[{name!r}]")
        restated = [n for n in named if own[n].default is not inspect.Parameter.empty]
        if restated:  # the declaration's default is the one the command gets: a second one would lie
            raise TypeError(f"hourly {name}: {sorted(restated)} restate a default: hourly.options declares it "
                            "(write the parameter keyword-only, without one)")
        in_flags = [n for n in takes if n not in named]
        if in_flags and "flags" not in own:
            raise TypeError(f"hourly {name} takes {in_flags} but has no flags parameter")
        params = list(arguments)
        for n in takes:
            annotation, default = typer_option(options.option(name, n))
            params.append(inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))
        params.append(inspect.Parameter("hourly_ctx", inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context))

        @functools.wraps(fn)
        def run(*args: Any, **kw: Any) -> Any:
            ctx = kw.pop("hourly_ctx")
            _resolve(name, kw, ctx.meta.get(GIVEN, set()))
            if "flags" in own:
                kw["flags"] = {n: kw.pop(n) for n in in_flags}
            return fn(*args, **kw)

        run.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        run.command_name = name  # type: ignore[attr-defined]  # the name cli.py registers it under
        return run  # type: ignore[return-value]

    return wrap


_ARGUMENT = type(typer.Argument(None))


def _resolve(name: str, values: dict[str, Any], given: set[str]) -> None:
    """Check what the command line gave (a usage error: exit 2), then give the options it did not
    give their value from the settings file's table of the command, if it has one."""
    for n in given:
        refused = options.option(name, n).refusal(values[n])
        if refused:
            raise UsageError(*refused)
    if "config" not in options.TAKES[name]:
        return
    from hourly.measure.settings import load_config
    section = load_config(values.get("config")).sections.get(name, {})
    for n, v in section.items():
        if n not in given:
            values[n] = _as_option_value(options.option(name, n), v)


def _as_option_value(opt: Option, v: Any) -> Any:
    """A value of the settings file as the option's parameter holds it (a list of one for a lone
    string of a repeatable option, the enum member for a word)."""
    if opt.repeatable:
        return [v] if isinstance(v, str) else list(v)
    if isinstance(opt.type, type) and issubclass(opt.type, Enum):
        return opt.type(v)
    return v
