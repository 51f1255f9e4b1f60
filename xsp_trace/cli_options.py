"""Option types and parsers of the `xsp-trace` command line, and its one-line failure: what the
commands in xsp_trace/cli.py share (enums typer checks, the one comma-list parser, the checks of
numeric options and output paths, the progress bar, the database a reading command opens, the
Perfetto write of `perfetto` and `convert --perfetto`)."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from enum import Enum
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

from .errors import InputError, one_line
from .output_files import check_interrupted
from .printable import printable
from .timebase import LIMIT_NS, parse_time


class StoreFormat(str, Enum):
    """What `convert` writes."""

    duckdb = "duckdb"
    parquet = "parquet"


class Engine(str, Enum):
    """Where `convert` runs the per-trace conversions."""

    local = "local"
    ray = "ray"


class Scope(str, Enum):
    """Which GPU work `analyze` counts (xsp_trace/analyze/scope.py)."""

    all = "all"
    profiled = "profiled"


class OutputFormat(str, Enum):
    """How `analyze` prints its tables."""

    table = "table"
    csv = "csv"
    json = "json"


# DuckDB's memory cap for `query` (its default is 80 % of the machine); beyond it, sorts and joins spill.
QUERY_MEMORY_LIMIT = "4GB"

state = {"debug": False, "console_script": False}  # --debug (its callback); console_script: run by cli.main, not in-process
err_console = Console(stderr=True)

INT64_MAX = 2**63 - 1
INT32_MAX = 2**31 - 1  # run ids and iteration numbers are INTEGER columns
TIMEOUT_MAX_S = 7 * 24 * 3600  # a week: beyond it a --timeout is a typo (and 1e400 overflows the timer)
ITERATIONS_MAX = 1_000_000  # iteration numbers --iteration may list (ranges included)


def say(line: str) -> None:
    """A line for the user on stderr (a note, progress, what was written), shown as printable text."""
    err_console.print(printable(line), markup=False, highlight=False, soft_wrap=True)


def in_range(low: float | None = None, high: float | None = None, *, above: bool = False, what: str = "a number"):
    """The check of a numeric option (typer's callback=): its value finite and in [low, high] (`above`:
    greater than low); otherwise the CLI's usage error, one line and exit 2. The one check of every
    numeric option, so that `nan`, `inf`, `1e400` or an integer past int64 never reach the code."""
    bounds = (
        [f"above {_shown(low)}" if above else f"from {_shown(low)}" if high is not None else f"of {_shown(low)} or more"] if low is not None else []
    )
    bounds += [f"to {_shown(high)}" if low is not None and not above else f"up to {_shown(high)}"] if high is not None else []

    def check(value: float | None) -> float | None:
        if value is None:
            return None
        low_ok = low is None or (value > low if above else value >= low)
        if not (math.isfinite(value) and low_ok and (high is None or value <= high)):
            raise typer.BadParameter(f"{_shown(value)} is not {' '.join([what, *bounds])}")
        return value

    return check


def _shown(number: float) -> str:
    return str(number) if isinstance(number, int) else f"{number:g}"


WHOLE = in_range(0, INT64_MAX, what="a whole number")  # a row count, a limit, a minimum count
SECONDS = in_range(0, TIMEOUT_MAX_S, what="a number of seconds")  # a --timeout, 0 = no limit
RUN_ID = in_range(1, INT32_MAX, what="a run id")
JOBS = in_range(1, INT64_MAX, what="a whole number")
RUN_ID_OFFSET = in_range(0, INT32_MAX, what="a whole number")
NESTING_LEVEL = in_range(1, INT32_MAX, what="a nesting level")
RUN_SECONDS = in_range(0, TIMEOUT_MAX_S, above=True, what="a number of seconds")  # capture's --timeout: 0 would stop every run
PEAK = in_range(0, None, above=True, what="a rate")  # --peak-flops, --peak-dram-bw

# CSV keeps every value exactly unless --csv-safe is given (tables.CSV_FORMULA_START).
CSV_SAFE_HELP = (
    "Write CSV text cells starting with =, +, -, @, a tab or a carriage return with a leading ' (a spreadsheet would run them as formulas)."
)
TIME_NS = in_range(-(LIMIT_NS - 1), LIMIT_NS - 1, what="a time in ns")  # the time base's range (timebase.py)


def memory_size(text: str) -> str:
    """A --memory-limit (typer's callback=): what DuckDB's memory_limit takes (4GB, 500MB), checked on
    an empty in-memory DuckDB, so that a bad one is the CLI's usage error and not DuckDB's traceback."""
    import duckdb

    from .store.connection import duckdb_connect

    if text == QUERY_MEMORY_LIMIT:
        return text  # the default: no DuckDB opened to check it
    con = duckdb_connect()
    try:
        con.execute("SET memory_limit = ?", [text])
    except duckdb.Error as exc:
        raise typer.BadParameter(f"{text!r} is not a memory size ({one_line(str(exc).splitlines()[0])})") from None
    finally:
        con.close()
    return text


def output_path(text: str | Path) -> Path:
    """An output path option (typer's parser=; also given the option's default, a Path): an empty one
    (`-o ''`, which Path reads as the current folder) is the CLI's usage error."""
    if isinstance(text, str) and not text.strip():
        raise typer.BadParameter("an empty path names no file")
    return Path(text)


def fail(exc: InputError | OSError) -> NoReturn:
    """One clear line on stderr and exit code 2 (the traceback only with --debug): the one handler of
    every command's InputError and OSError (OneLineErrors.main calls it). After SIGINT/SIGTERM the error
    is the signal's consequence: the CLI's main reports the signal instead (exit 130/143)."""
    check_interrupted()
    if state["debug"]:
        raise exc
    if isinstance(exc, OSError):  # the environment, not xsp-trace: a file vanished, a permission...
        exc = InputError(exc.filename, f"{exc.strerror or exc}", "check the path and its permissions")
    err_console.print(f"xsp-trace: error: {exc.line()}", markup=False, highlight=False, soft_wrap=True)
    sys.exit(2)


# click's exceptions, from the click typer runs on (its own copy in typer >= 0.22, else the click package).
_CLICK_ERRORS = sys.modules[typer.BadParameter.__module__]
_NO_ARGS_IS_HELP = getattr(_CLICK_ERRORS, "NoArgsIsHelpError", ())


class OneLineErrors(typer.core.TyperGroup):
    """The CLI's command group: a usage error (a bad --format value, a missing argument) is one line
    on stderr and exit 2, like every other error -- not click's usage text and rich's error box -- and
    a command's InputError or OSError goes to `fail`, so the commands need no handler of their own."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except _NO_ARGS_IS_HELP as exc:  # `xsp-trace` alone: the help, as before
            exc.show()
            sys.exit(exc.exit_code)
        except _CLICK_ERRORS.ClickException as exc:
            context = getattr(exc, "ctx", None)
            command = context.command_path if context is not None else "xsp-trace"
            print(f"xsp-trace: error: {one_line(exc.format_message())} (see {command} --help)", file=sys.stderr, flush=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            print("xsp-trace: error: aborted", file=sys.stderr, flush=True)
            sys.exit(1)
        except (InputError, OSError) as exc:
            fail(exc)
        sys.exit(code if isinstance(code, int) else 0)


class ProgressReporter:
    """A rich progress bar on stderr, shown only for conversions that take more than a moment."""

    def __init__(self, enabled: bool):
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TimeElapsedColumn(),
            console=err_console,
            transient=True,
            disable=not enabled,
        )
        self.task: TaskID | None = None  # set on entering

    def __enter__(self):
        self.progress.__enter__()
        self.task = self.progress.add_task("starting", total=None)
        return self

    def __exit__(self, *exc):
        return self.progress.__exit__(*exc)

    def __call__(self, what: str, fraction: float | None) -> None:
        assert self.task is not None, "progress reported outside the with block"
        what = printable(what)  # a file name may hold what a terminal would act on
        if fraction is None:
            self.progress.update(self.task, description=what, total=None)
        else:
            self.progress.update(self.task, description=what, total=1.0, completed=fraction)


def comma_list(values: str | list[str] | None, option: str, convert=str, example: str = "1,2") -> list | None:
    """The items of a comma-separated option (given once or repeated), converted; None when absent.
    One line and exit 2 when an item does not convert. The one list parser of the CLI."""
    if not values:
        return None
    text = values if isinstance(values, str) else ",".join(values)
    out = []
    for item in text.split(","):
        if item.strip():
            try:
                out.append(convert(item.strip()))
            except ValueError:
                problem = f"{option} {item.strip()!r} is not a {'number' if convert is int else 'valid item'}"
                raise InputError(None, problem, f"e.g. {option} {example}") from None
    return out


def iteration_list(values: list[str] | None) -> list[int] | None:
    """The iteration numbers of --iteration (3,5-7): each an INTEGER, at most ITERATIONS_MAX of them."""
    if not values:
        return None
    out: list[int] = []
    for part in ",".join(values).split(","):
        part = part.strip()
        try:
            if "-" in part[1:]:
                lo, hi = part.split("-", 1) if not part.startswith("-") else part[1:].split("-", 1)
                bounds = [int(lo), int(hi)]
            else:
                bounds = [int(part)] * 2 if part else []
        except ValueError:
            raise InputError(None, f"--iteration {part!r} is not an iteration number or range", "e.g. --iteration 3,5-7") from None
        if any(abs(n) > INT32_MAX for n in bounds):
            raise InputError(None, f"--iteration {part!r} is past the iteration numbers a trace holds", f"numbers up to {INT32_MAX}")
        if bounds and len(out) + bounds[1] - bounds[0] + 1 > ITERATIONS_MAX:
            raise InputError(None, f"--iteration {part!r} lists more than {ITERATIONS_MAX:,} iterations", "narrow the range")
        out.extend(range(bounds[0], bounds[1] + 1) if bounds else ())
    return out


def time_window(text: str | None) -> tuple | None:
    """(start, end) ns after each run's origin of --window START:END; each end takes a unit (ns, us,
    ms, s; none: ns), e.g. 120ms:180ms."""
    if text is None:
        return None
    try:
        lo, hi = (parse_time(v) for v in text.split(":"))
    except ValueError:
        raise InputError(
            None, f"--window {text!r} is not START:END (times after the run's first event, units ns, us, ms or s)", "e.g. --window 120ms:180ms"
        ) from None
    if hi <= lo:
        raise InputError(None, f"--window {text!r} ends before it starts", "END must be above START")
    return (lo, hi)


def percent(text: str, what: str, high: float | None = None) -> float:
    """The number of a percentage option ("5%" or "5"): finite, 0 or more, at most `high`."""
    try:
        value = float(text.strip().rstrip("%"))
    except ValueError:
        raise InputError(None, f"{what} {text!r} is not a percentage", "e.g. 5% or 5") from None
    if not math.isfinite(value) or value < 0 or (high is not None and value > high):
        bounds = f"from 0 to {high:g}" if high is not None else "of 0 or more"
        raise InputError(None, f"{what} {text!r} is not a finite percentage {bounds}", "e.g. 5% or 5")
    return value


def readable_database(path: Path) -> Path:
    """The database a reading command opens for `path`: a raw trace (.nsys-rep, .sqlite, .json[.gz])
    is converted once into the cache beside it (xsp_trace/convert/trace_cache.py) and read from there."""
    from .store.opening import is_duckdb_file

    if path.is_dir() or is_duckdb_file(path):
        return path  # no need to import the converters
    from .convert.trace_cache import database_for

    return database_for(path, lambda what, _fraction: say(what))


def write_perfetto(database: Path, output: Path, options) -> None:
    """Export `database` (or a raw trace, through the cache) as a Perfetto trace and say what was written."""
    from .perfetto import export_perfetto
    from .process_heap import keep_heap

    database = readable_database(database)
    with keep_heap():  # process-wide, so the CLI's choice: this process ends with the export (process_heap.py)
        stats = export_perfetto(database, output, options)
    typer.echo(
        f"wrote {output} ({stats.slices} slices, {stats.flows} flows, {stats.instants} marks, "
        f"{stats.counter_samples} counter samples; runs {', '.join(map(str, stats.runs))}) "
        "-- open it in https://ui.perfetto.dev"
    )
