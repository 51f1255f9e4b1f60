"""Seeded fuzzing of `xsp-trace convert` on mutated real fixtures, and of the reading commands on
hand-edited databases, at a size CI affords.

Every input (tests/support/fuzzing/: byte flips, truncation, JSON field deletion/type change, numbers out
of range, SQLite table/column drops, NULL/text/blob in numeric columns, duplicate string ids, end
before start) must give exit 0 or 2 within 30 s, no traceback, one error line naming the input,
no leaked temporary file, the input unchanged and no half-written output. tests/support/fuzz_long.py
runs the same fuzzer over thousands of seeds (docs/robustness.md).
"""

from __future__ import annotations

import os
import re

import pytest

from support.fuzzing import input_kind, preload, run_many

pytestmark = pytest.mark.slow  # Ray, worker processes and big inputs

INPUTS = int(os.environ.get("XSP_FUZZ_INPUTS", "60"))
SEED_BASE = 1_000_000  # CI seeds; the long run (tests/support/fuzz_long.py) starts at 0


def test_fuzzed_inputs_fail_cleanly_or_convert(tmp_path):
    preload()
    jobs = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
    seeds = [s for s in range(SEED_BASE, SEED_BASE + 2 * INPUTS) if input_kind(s) != "database"][:INPUTS]  # databases: below
    outcomes = run_many(seeds, tmp_path, jobs=jobs)
    assert len(outcomes) == INPUTS
    bad = [(o.seed, o.input, o.exit_code, o.problems, o.stderr[-2000:]) for o in outcomes if o.problems]
    assert not bad, bad
    codes = {o.exit_code for o in outcomes}
    assert codes <= {0, 2} and codes == {0, 2}, codes  # the mutations both break and spare inputs


DATABASE_SEEDS = 4  # each ~10-40 s on a loaded 2-core machine: three commands on a small database


def test_hand_edited_databases_read_cleanly(tmp_path):
    """Converted fixtures edited without changing their schema (rows deleted or duplicated, NULLs,
    times swapped or shifted, numbers at 0, -1, 2^62 or the type's limit): analyze, perfetto and
    diff answer (exit 0, diff 1) or refuse in one line naming the database (exit 2), never a
    traceback, a hang, a changed input or a half-written output (tests/support/fuzzing/databases.py)."""
    preload()
    seeds = [s for s in range(SEED_BASE, SEED_BASE + 1000) if input_kind(s) == "database"][:DATABASE_SEEDS]
    outcomes = run_many(seeds, tmp_path, jobs=1)
    assert [o.seed for o in outcomes] == seeds
    bad = [(o.seed, o.input, o.exit_code, o.problems, o.stderr[-3000:]) for o in outcomes if o.problems]
    assert not bad, bad
    for o in outcomes:  # every case ran its three commands, each to an answer
        assert o.input.startswith("db_") and re.search(r"\[exits [0-2]/[0-2]/[0-2]\]$", o.input), o.input
        assert o.exit_code in (0, 2), (o.seed, o.input)


def _outcome(source, out, reader: str):
    """('error', line) or ('ok', spans rows) for one reader of the Kineto converter, in-process."""
    import duckdb

    from xsp_trace.convert import ConvertOptions, convert_files
    from xsp_trace.errors import InputError

    try:
        convert_files([source], out, ConvertOptions(kineto_reader=reader))
    except InputError as exc:
        return "error", exc.problem
    with duckdb.connect(str(out), read_only=True) as con:
        rows = con.execute("SELECT kind, name, start_ns, end_ns, pid, tid, device_id, stream_id, correlation_id FROM spans ORDER BY ALL").fetchall()
    return "ok", rows


def test_both_kineto_readers_accept_and_reject_the_same_inputs(tmp_path, capfd):
    """The DuckDB reader (auto) and the Python reader agree on every fuzzed Kineto input: both
    reject it, or both store the same spans."""
    from support.fuzzing import make_input

    compared = 0
    for seed in range(2_000_000, 2_000_400):
        folder = tmp_path / f"s{seed}"
        folder.mkdir()
        source = make_input(seed, folder)
        if source.name.startswith("n."):
            continue
        fast = _outcome(source, folder / "fast.duckdb", "auto")
        slow = _outcome(source, folder / "slow.duckdb", "python")
        assert fast[0] == slow[0], (seed, source.name, fast[0], fast[1] if fast[0] == "error" else "", slow[0], slow[1] if slow[0] == "error" else "")
        if fast[0] == "ok":
            assert fast[1] == slow[1], (seed, source.name)
        compared += 1
        if compared == 24:
            break
    assert compared == 24
