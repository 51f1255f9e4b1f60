"""What a written trace must show, asked of Perfetto's trace processor and of the DuckDB
database it was written from -- the two are compared, never a number with itself."""

from __future__ import annotations

import re
from collections import Counter

import duckdb

from .trace_processor import WasmTraceProcessor

_LANE_SUFFIX = re.compile(r" · overlap \d+$")


def db_origins(con: duckdb.DuckDBPyConnection) -> dict[int, int]:
    """Each run's time zero as the export aligns it: the earliest span, mark or counter time."""
    rows = con.execute(
        """SELECT run_id, min(t) FROM (
               SELECT run_id, start_ns AS t FROM spans UNION ALL SELECT run_id, ts_ns FROM marks
               UNION ALL SELECT run_id, ts_ns FROM counters) GROUP BY run_id"""
    ).fetchall()
    return dict(rows)


def tp_slices_by_category(tp: WasmTraceProcessor) -> dict[str, int]:
    return {r["category"]: r["n"] for r in tp.query("SELECT category, count(*) AS n FROM slice GROUP BY category")}


def db_spans_by_kind(con) -> dict[str, int]:
    return dict(con.execute("SELECT kind, count(*) FROM spans GROUP BY kind").fetchall())


def cpu_slices_tp(tp: WasmTraceProcessor) -> Counter:
    """(name, kind, ts, dur, depth) of every slice on a thread track."""
    rows = tp.query(
        "SELECT s.name, s.category, s.ts, s.dur, s.depth FROM slice s JOIN thread_track t ON s.track_id = t.id WHERE s.category != 'mark'"
    )
    return Counter((r["name"], r["category"], int(r["ts"]), int(r["dur"]), int(r["depth"])) for r in rows)


def cpu_spans_db(con) -> Counter:
    origins = db_origins(con)
    rows = con.execute("SELECT run_id, name, kind, start_ns, end_ns, depth FROM spans WHERE tid IS NOT NULL").fetchall()
    return Counter((name, kind, start - origins[run], end - start, depth) for run, name, kind, start, end, depth in rows)


def lane_slices_tp(tp: WasmTraceProcessor) -> Counter:
    """(name, kind, ts, dur) of the CPU slices moved to "overlapping ranges" lane tracks."""
    rows = tp.query(
        "SELECT s.name, s.category, s.ts, s.dur FROM slice s JOIN track t ON s.track_id = t.id "
        "WHERE t.name LIKE '% · overlapping ranges %' OR t.name LIKE 'overlapping ranges %'"
    )
    return Counter((r["name"], r["category"], int(r["ts"]), int(r["dur"])) for r in rows)


def assert_cpu_nesting(tp: WasmTraceProcessor, con) -> int:
    """Every CPU span is a slice on its thread track at its database depth, or -- when it crosses
    an open range on its thread -- on a lane track. Returns how many went on lanes."""
    on_threads = cpu_slices_tp(tp)
    expected = cpu_spans_db(con)
    assert on_threads - expected == Counter(), "slices on thread tracks that the database does not have"
    elsewhere = Counter(k[:4] for k in (expected - on_threads).elements())
    assert elsewhere == lane_slices_tp(tp)
    return sum(elsewhere.values())


def gpu_slices_tp(tp: WasmTraceProcessor) -> Counter:
    """(device group name, stream track name without lane suffix, name, kind, ts, dur, depth) of GPU slices."""
    rows = tp.query(
        "SELECT g.name AS gpu, t.name AS stream, s.name, s.category, s.ts, s.dur, s.depth "
        "FROM slice s JOIN track t ON s.track_id = t.id JOIN track g ON t.parent_id = g.id "
        "WHERE t.name LIKE 'stream %' OR t.name LIKE 'all streams%'"
    )
    return Counter(
        (r["gpu"], _LANE_SUFFIX.sub("", r["stream"]), r["name"], r["category"], int(r["ts"]), int(r["dur"]), int(r["depth"])) for r in rows
    )


def gpu_spans_db(con, group_names: dict) -> Counter:
    origins = db_origins(con)
    rows = con.execute(
        "SELECT run_id, device_id, stream_id, name, kind, start_ns, end_ns FROM spans "
        "WHERE tid IS NULL AND (device_id IS NOT NULL OR stream_id IS NOT NULL)"
    ).fetchall()
    return Counter(
        (group_names[(run, device)], "all streams" if stream is None else f"stream {stream}", name, kind, start - origins[run], end - start, 0)
        for run, device, stream, name, kind, start, end in rows
    )


def gpu_group_names_tp(tp: WasmTraceProcessor, con) -> dict:
    """(run, device) -> the name of its GPU group track, found by the run title and device in the name."""
    names = [r["name"] for r in tp.query("SELECT name FROM track WHERE name LIKE 'run % · %GPU %'")]
    groups = {}
    for run, device in con.execute("SELECT DISTINCT run_id, device_id FROM spans WHERE device_id IS NOT NULL").fetchall():
        matching = [n for n in names if n.startswith(f"run {run} · ") and f" · GPU {device}" in n and re.search(rf" · GPU {device}( · |$)", n)]
        assert len(matching) == 1, f"run {run} GPU {device}: group tracks {matching} among {names}"
        groups[(run, device)] = matching[0]
    return groups


def assert_trace_matches_database(tp: WasmTraceProcessor, con: duckdb.DuckDBPyConnection) -> None:
    """The whole-database export, as the trace processor read it, against the database."""
    assert tp.problems() == []
    assert tp.scalar("SELECT count(*) FROM slice WHERE dur < 0") == 0

    by_category = tp_slices_by_category(tp)
    marks = by_category.pop("mark", 0)
    assert by_category == db_spans_by_kind(con)
    assert marks == con.execute("SELECT count(*) FROM marks").fetchone()[0]

    # Every launch is one flow, from the API slice to the GPU slice with the same correlation id.
    assert tp.scalar("SELECT count(*) FROM flow") == con.execute("SELECT count(*) FROM launches").fetchone()[0]
    bad_flows = tp.query(
        "SELECT count(*) AS n FROM flow f JOIN slice a ON f.slice_out = a.id JOIN slice g ON f.slice_in = g.id "
        "WHERE a.category != 'api' OR g.category NOT IN ('kernel', 'memcpy', 'memset', 'sync') "
        "OR extract_arg(a.arg_set_id, 'debug.correlation_id') != extract_arg(g.arg_set_id, 'debug.correlation_id')"
    )
    assert bad_flows[0]["n"] == 0

    # Tracks: one thread track per CPU thread, one process per (run, process), a stream track per GPU stream.
    db_threads = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT run_id, pid, tid FROM spans WHERE tid IS NOT NULL "
        "UNION SELECT DISTINCT run_id, pid, tid FROM marks WHERE tid IS NOT NULL)"
    ).fetchone()[0]
    assert tp.scalar("SELECT count(*) FROM thread_track") == db_threads
    assert tp.scalar("SELECT count(*) FROM thread WHERE utid != 0") == db_threads
    db_processes = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT run_id, pid FROM spans WHERE tid IS NOT NULL OR "
        "(device_id IS NULL AND stream_id IS NULL AND pid IS NOT NULL) "
        "UNION SELECT DISTINCT run_id, pid FROM marks WHERE pid IS NOT NULL "
        "UNION SELECT DISTINCT run_id, pid FROM counters WHERE pid IS NOT NULL)"
    ).fetchone()[0]
    assert tp.scalar("SELECT count(*) FROM process WHERE upid != 0") == db_processes
    db_streams = con.execute(
        "SELECT count(*) FROM (SELECT DISTINCT run_id, device_id, stream_id FROM spans "
        "WHERE tid IS NULL AND (device_id IS NOT NULL OR stream_id IS NOT NULL))"
    ).fetchone()[0]
    assert (
        tp.scalar("SELECT count(*) FROM track WHERE (name LIKE 'stream %' OR name LIKE 'all streams%') AND name NOT LIKE '% · overlap %'")
        == db_streams
    )
    assert tp.scalar("SELECT count(*) FROM counter") == con.execute("SELECT count(*) FROM counters WHERE value IS NOT NULL").fetchone()[0]

    # Every GPU span is a depth-0 slice on its device's stream track (or a lane of it), at its time.
    assert gpu_slices_tp(tp) == gpu_spans_db(con, gpu_group_names_tp(tp, con))
