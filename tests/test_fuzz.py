"""Seeded fuzzing of `xsp-trace convert` on mutated real fixtures, at a size CI affords.

Every input (tests/fuzzing.py: byte flips, truncation, JSON field deletion/type change, numbers out
of range, SQLite table/column drops, NULL/text/blob in numeric columns, duplicate string ids, end
before start) must give exit 0 or 2 within 30 s, no traceback, one error line naming the input,
no leaked temporary file, the input unchanged and no half-written output. bench/fuzz_long.py
runs the same fuzzer over thousands of seeds (docs/robustness.md).
"""

from __future__ import annotations

import os

from fuzzing import preload, run_many

INPUTS = int(os.environ.get("XSP_FUZZ_INPUTS", "60"))
SEED_BASE = 1_000_000  # CI seeds; the long run (bench/fuzz_long.py) starts at 0


def test_fuzzed_inputs_fail_cleanly_or_convert(tmp_path):
    preload()
    jobs = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1))
    outcomes = run_many(range(SEED_BASE, SEED_BASE + INPUTS), tmp_path, jobs=jobs)
    assert len(outcomes) == INPUTS
    bad = [(o.seed, o.input, o.exit_code, o.problems, o.stderr[-2000:]) for o in outcomes if o.problems]
    assert not bad, bad
    codes = {o.exit_code for o in outcomes}
    assert codes <= {0, 2} and codes == {0, 2}, codes  # the mutations both break and spare inputs
