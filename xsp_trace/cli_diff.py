"""`xsp-trace diff`: two runs compared, the step-level story first (xsp_trace/analyze/diff.py does
the work). A thin wrapper, registered on the app in cli.py."""

from __future__ import annotations

from pathlib import Path

import typer

from .cli_options import CSV_SAFE_HELP, WHOLE, OutputFormat, percent, readable_database
from .errors import InputError


def diff(
    base: Path = typer.Argument(..., help="Baseline xsp-trace database, or a raw trace (converted once into .xsp-cache/)."),
    new: Path = typer.Argument(..., help="Candidate xsp-trace database, or a raw trace."),
    fail_above: str = typer.Option(
        "5%",
        "--fail-above",
        help="Exit 1 when the median step, or an entry's time per step (per call without steps), grew by more than this beyond noise (a finite percentage, 0 or more).",
    ),
    min_calls: int = typer.Option(10, "--min-calls", callback=WHOLE, help="Calls an entry needs on both sides to gate (0 or more; 0 = no minimum)."),
    min_share: str = typer.Option("1%", "--min-share", help="Entries below this share of their level's baseline time never gate (0% to 100%)."),
    level: list[str] | None = typer.Option(None, "--level", help="kernel, op or layer (repeat); default all three."),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="table, csv (headline on stderr) or json: every row unless --limit."),
    limit: int | None = typer.Option(
        None, "--limit", callback=WHOLE, help="Rows to print (0 = all; default 20 in a table, all in csv/json); regressions always."
    ),
    full_names: bool = typer.Option(False, "--full-names", help="Kernel names in full (default: shortened as analyze does, one line per row)."),
    wide: bool = typer.Option(False, "--wide", help="Tables as wide as they need (default: the terminal's width)."),
    csv_safe: bool = typer.Option(False, "--csv-safe", help="With --format csv: " + CSV_SAFE_HELP),
) -> None:
    """Compare two runs: the step-level story first, then each kernel, op and layer; fail on a regression (CI gate).

    Headline: step time (median, spread, and a 95 % interval of the shift from the steps: Hodges-Lehmann with its Mann-Whitney interval), GPU busy / idle, kernel calls and GPU time, communication, each with its change; then the critical path per step by cause and by level (layer, range, op, kernel), biggest change first. Per step when both sides have >= 2 steps (ProfilerStep#N in any category, or convert --step-ranges REGEX); else per second of each run's window.

    Rows compare like with like: time per step; without steps, mean time per call, or time per second of window where the calls changed more than 2x (batched work is never compared per call). Names are compared without per-instance details (normalize_name in xsp_trace/naming.py).

    Gate: exit 1 for a step-time regression (the median step grew by more than --fail-above and the interval lies above 0), or for an entry whose time per step (per call) grew by more than --fail-above and by more than 2 standard errors, with >= --min-calls calls and >= --min-share of its level -- unless the median step got faster by more than --fail-above. Exit 0 otherwise; 2: bad input.

    Examples:

      xsp-trace diff tests/data/known_cause_dataloader_sleep/with_sleep.json.gz tests/data/known_cause_dataloader_sleep/without_sleep.json.gz

      xsp-trace diff main.duckdb pr.duckdb --fail-above 5% --level kernel --format json
    """
    from .analyze.diff import LEVELS, Gate, diff_databases
    from .analyze.diff_output import print_diff

    for path in (base, new):
        if not path.exists():
            raise InputError(path, "does not exist", "pass two databases written by xsp-trace convert")
    labels = (base, new)
    base, new = readable_database(base), readable_database(new)
    levels = tuple(level) if level else LEVELS
    unknown = [lvl for lvl in levels if lvl not in LEVELS]
    if unknown:
        raise InputError(None, f"--level {', '.join(unknown)} is not one of {', '.join(LEVELS)}", "pick kernel, op or layer")
    gate = Gate(percent(fail_above, "--fail-above"), min_calls, percent(min_share, "--min-share", high=100))
    result = diff_databases(base, new, gate, levels, labels)
    print_diff(result, fmt.value, limit, full_names, wide, csv_safe)
    if result.failed:
        raise typer.Exit(1)
