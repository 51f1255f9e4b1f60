"""blocking_os_calls: OS runtime calls that block a thread, and their time in GPU idle stretches.

On this project's nsys recording (tests/data/nsys_2022_cpu_sampling_hot_and_blocking: each of 6
steps sleeps 30 ms and blocks in a pipe read for ~20 ms) against the export's own OSRT_API rows;
on a hand-made trace for the GPU idle overlap:
  kernel A [30, 100) us, kernel B [460, 470) us (launched at 400): GPU idle over [100, 460);
  read [150, 300) with a futex [200, 250) inside it (counted with the read only),
  read [440, 480) (20 us of it in the idle stretch), open64 [310, 320) (not a blocking call).
"""

from __future__ import annotations

import sqlite3

import pytest

from conftest import DATA
from support.handmade import Run, write
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.formats import nsys_export as fmt

OWN = DATA / "nsys_2022_cpu_sampling_hot_and_blocking" / "cpu_sampling.sqlite"
US = 1000


def _records(con):
    return run_analysis(con, "blocking_os_calls").records()


def test_the_sleeps_and_reads_of_the_main_thread_against_the_export(converted_path):
    rows = {r["function"]: r for r in _records(open_session(converted_path(OWN))) if r["thread"] == "python"}
    with sqlite3.connect(f"file:{OWN}?mode=ro", uri=True) as export:
        reference = dict(
            export.execute(
                f"""SELECT s.value, sum(o."end" - o.start) FROM {fmt.OSRT_API} AS o JOIN StringIds AS s ON s.id = o.nameId
                    WHERE o.eventClass = {fmt.OsrtEventClass.CALL} AND (o.globalTid & {fmt.ID_MASK}) = (o.globalTid >> {fmt.PID_SHIFT} & {fmt.ID_MASK})
                    GROUP BY 1"""
            ).fetchall()
        )
    assert rows["clock_nanosleep"]["calls"] == 6  # one time.sleep per step
    assert rows["clock_nanosleep"]["total_ms"] == round(reference["clock_nanosleep"] / 1e6, 3) >= 6 * 30
    assert rows["read"]["total_ms"] == round(reference["read"] / 1e6, 3) >= 6 * 19
    assert "open64" not in rows and all(r["in_gpu_idle_ms"] == 0 for r in rows.values())  # no GPU in this run


@pytest.fixture(scope="module")
def handmade(tmp_path_factory):
    run = Run(1)
    run.gpu("kernel", "A", (10 * US, 20 * US), (30 * US, 100 * US))
    run.gpu("kernel", "B", (400 * US, 450 * US), (460 * US, 470 * US))
    for name, start, end in (("read", 150, 300), ("futex", 200, 250), ("read", 440, 480), ("open64", 310, 320)):
        run.span("other", name, start * US, end * US, category=fmt.OSRT_CATEGORY)
    return open_session(write(tmp_path_factory.mktemp("osrt") / "osrt.duckdb", [run]))


def test_blocking_time_in_gpu_idle_counts_nested_calls_once(handmade):
    rows = [(r["function"], r["calls"], r["total_ms"], r["longest_ms"], r["in_gpu_idle_ms"], r["launches"]) for r in _records(handmade)]
    assert rows == [("read", 2, 0.19, 0.15, 0.17, 2)]
