"""Where each run's time 0 lies: the one choice behind `perfetto --align` and `analyze --align`.

Every table keeps each run's own clock (spans.start_ns ...). A run's time zero is the time on its
clock that a window counts from and that the Perfetto export shows as 0:

- origin (the default): the run's first event, runs.origin_ns -- every run starts at 0 side by side,
  and a time is the time analyze and the findings show (xsp_trace/timebase.py);
- utc: one instant for all the selected runs -- the earliest first event among them on the absolute
  clock (runs.clock_origin_utc_ns + run-clock time), mapped back to each run's clock -- so runs of
  one job (ranks, leveled runs recorded side by side) line up as they ran;
- own: each run's own clock in the export (what `--keep-clocks` did); windows still count from the
  run's first event, as they did with --keep-clocks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

import duckdb

from ..errors import InputError

Alignment = Literal["origin", "utc", "own"]
ALIGNMENTS: tuple[str, ...] = get_args(Alignment)
# TEMP TABLE (run_id, zero_ns) of the selected runs that have events: read by perfetto/select.sql
# and by analyze's --window (analyze/session.py).
TIME_ZEROS = "xsp_time_zeros"


def check_alignment(align: str, allowed: tuple[str, ...] = ALIGNMENTS) -> Alignment:
    """The alignment named `align`, or one line naming the choices."""
    if align not in allowed:
        raise InputError(None, f"--align {align!r} is not one of {', '.join(allowed)}", f"e.g. --align {allowed[0]}")
    return align  # type: ignore[return-value]  # one of get_args(Alignment), checked above


def perfetto_alignment(align: str | None, keep_clocks: bool = False) -> Alignment:
    """`perfetto --align` (default origin); --keep-clocks, from before --align, is --align own."""
    if keep_clocks and align not in (None, "own"):
        raise InputError(None, f"--keep-clocks is --align own, and cannot go with --align {align}", "give one of the two")
    return check_alignment("own" if keep_clocks else align or "origin")


def window_alignment(align: str | None, window_given: bool) -> Alignment:
    """`analyze --align`: the clock --window is read on (origin or utc); given without --window it
    would change nothing, which is refused rather than ignored."""
    if align is None:
        return "origin"
    if not window_given:
        raise InputError(
            None, f"--align {align} says which clock --window is on, and no --window is given", "add --window START:END, or leave out --align"
        )
    return check_alignment(align, ("origin", "utc"))


def create_time_zeros(
    con: duckdb.DuckDBPyConnection,
    align: Alignment,
    run_ids: list[int] | None = None,
    database: Path | str | None = None,
    runs_option: str = "--runs",
) -> None:
    """TEMP TABLE xsp_time_zeros (run_id, zero_ns) of the runs in the connection's `runs` (those of
    `run_ids`, or all) that have events: each run's time zero on its own clock (module docstring).
    Under utc, one line for a selected run without an absolute clock."""
    if align == "utc":
        _check_absolute_clocks(con, run_ids, database, runs_option)
    # A run's event at run-clock time t is at clock_origin_utc_ns + t on the absolute clock; the earliest
    # first event among the runs is the shared 0, which on each run's clock is that instant less its offset.
    zero = "min(clock_origin_utc_ns + origin_ns) OVER () - clock_origin_utc_ns" if align == "utc" else "origin_ns"
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {TIME_ZEROS} AS SELECT run_id, {zero} AS zero_ns FROM runs "
        "WHERE origin_ns IS NOT NULL AND (CAST(? AS INTEGER[]) IS NULL OR list_contains(?, run_id))",
        [run_ids, run_ids],
    )


def _check_absolute_clocks(con: duckdb.DuckDBPyConnection, run_ids: list[int] | None, database: Path | str | None, runs_option: str) -> None:
    rows = con.execute(
        "SELECT run_id, clock_origin_utc_ns IS NOT NULL, source_kind, source_path FROM runs "
        "WHERE origin_ns IS NOT NULL AND (CAST(? AS INTEGER[]) IS NULL OR list_contains(?, run_id)) ORDER BY run_id",
        [run_ids, run_ids],
    ).fetchall()
    without = [(run_id, kind, path) for run_id, known, kind, path in rows if not known]
    if not without:
        return
    run_id, kind, path = without[0]
    others = [str(r[0]) for r in rows if r[1]]
    pick = f"pick runs that have one with {runs_option} {','.join(others)}" if others else "no selected run has one"
    raise InputError(
        database,
        f"run {run_id} ({kind or 'unknown source'}: {path or 'unknown path'}) has no absolute clock (runs.clock_origin_utc_ns is NULL: "
        f"its trace records no wall-clock time), so --align utc cannot place it",
        f"leave out --align utc (each run then starts at 0), or {pick}",
    )
