"""CUDA/HIP graph replays on real traces: every GPU activity a graph launch replays is linked to
that launch call, and so charged to the ops and annotations that enclosed the call on its thread.

Traces (tests/data/PROVENANCE.md):
- kineto_cuda_graphs_v100_2022: torch.compile'd training step on a V100, 12 cudaGraphLaunch
  calls (6 forward graphs on the main thread inside ProfilerStep#N, 6 backward graphs on the
  autograd thread), each replaying 315 or 429 kernels plus memsets and memcpys.
- kineto_hip_graphs_mi300x_vllm: one vLLM full-graph decode step on an MI300X, one
  hipGraphLaunch replaying 421 kernels.

Every reference is computed here from the raw JSON with the standard library (and HTA for the
kernel breakdown), never with the converter's tables. Derived copies (correlation args stripped,
graph ids written in) exercise the converter's fallbacks; they are made in tmp_path only.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import duckdb
import pytest

from conftest import NSYS_EXPORTS
from kineto_cases import hta_kernel_reference, load_raw
from xsp_trace.convert import ConvertOptions, convert_files

pytestmark = pytest.mark.slow  # real traces

DATA = Path(__file__).parent / "data"
V100 = DATA / "kineto_cuda_graphs_v100_2022" / "hta_v100_cuda_graphs_rank1_2022.json.gz"
MI300X = DATA / "kineto_hip_graphs_mi300x_vllm" / "tracelens_mi300x_vllm_full_graph_decode.json.gz"
CASES = {"kineto_cuda_graphs_v100_2022": V100, "kineto_hip_graphs_mi300x_vllm": MI300X}

# Written out on purpose (not imported from xsp_trace.formats): the references must not share
# the converter's tables.
GRAPH_LAUNCH_NAMES = {"cudaGraphLaunch", "hipGraphLaunch"}
RAW_GPU_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
RAW_CPU_RANGES = {"cpu_op", "user_annotation"}

# What the raw files hold (pinned so a changed fixture is noticed): graph launches, and the GPU
# activities they replayed per kind.
EXPECTED = {
    "kineto_cuda_graphs_v100_2022": (12, {"kernel": 4464, "memset": 576, "memcpy": 6}),
    "kineto_hip_graphs_mi300x_vllm": (1, {"kernel": 421}),
}

# Each replayed GPU activity with the graph launch it belongs to, from the converted database.
REPLAYS_SQL = """
    SELECT g.kind, g.name, g.start_ns, g.end_ns, g.stream_id, g.correlation_id,
           a.name AS launch_name, a.start_ns AS launch_start_ns, a.pid AS launch_pid, a.tid AS launch_tid,
           a.correlation_id AS launch_correlation_id, g.span_id, g.run_id
    FROM launches l
    JOIN spans g ON g.run_id = l.run_id AND g.span_id = l.gpu_span_id
    JOIN spans a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
    WHERE a.name IN ('cudaGraphLaunch', 'hipGraphLaunch')"""


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


def raw_graph_replays(raw: dict) -> tuple[dict, list]:
    """(graph launch events by correlation id, GPU events carrying one of those correlation ids)."""
    xs = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    launches = {e["args"]["correlation"]: e for e in xs if e.get("name") in GRAPH_LAUNCH_NAMES and "correlation" in e.get("args", {})}
    replayed = [e for e in xs if e.get("cat") in RAW_GPU_KINDS and e.get("args", {}).get("correlation") in launches]
    return launches, replayed


def raw_replay_rows(raw: dict) -> Counter:
    """The rows REPLAYS_SQL must give (less the span id), computed from the JSON."""
    launches, replayed = raw_graph_replays(raw)
    rows = Counter()
    for e in replayed:
        launch = launches[e["args"]["correlation"]]
        corr = e["args"]["correlation"]
        rows[
            (
                RAW_GPU_KINDS[e["cat"]],
                e["name"],
                _ns(e["ts"]),
                _ns(e["ts"] + e["dur"]),
                e["args"].get("stream", e["tid"]),
                corr,
                launch["name"],
                _ns(launch["ts"]),
                launch["pid"],
                launch["tid"],
                corr,
            )
        ] += 1
    return rows


def raw_enclosing_ranges(raw: dict) -> dict[int, set]:
    """Per graph launch (by correlation id): (name, start_ns) of the launch call and of every
    cpu_op/user_annotation that contains it on its thread."""
    launches, _ = raw_graph_replays(raw)
    by_thread = defaultdict(list)
    for e in raw["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in RAW_CPU_RANGES:
            by_thread[(e["pid"], e["tid"])].append((_ns(e["ts"]), _ns(e["ts"] + e["dur"]), e["name"]))
    enclosing = {}
    for corr, launch in launches.items():
        lo, hi = _ns(launch["ts"]), _ns(launch["ts"] + launch["dur"])
        ranges = {(name, s) for s, e, name in by_thread[(launch["pid"], launch["tid"])] if s <= lo and hi <= e}
        enclosing[corr] = ranges | {(launch["name"], lo)}
    return enclosing


def convert(path: Path, out: Path, reader: str = "auto") -> duckdb.DuckDBPyConnection:
    convert_files([path], out, ConvertOptions(kineto_reader=reader))
    return duckdb.connect(str(out), read_only=True)


@pytest.fixture(scope="module")
def raws():
    return {case: load_raw(path) for case, path in CASES.items()}


@pytest.mark.parametrize("case", CASES)
def test_raw_trace_holds_the_graph_replays(case, raws):
    launches, replayed = raw_graph_replays(raws[case])
    n_launches, per_kind = EXPECTED[case]
    assert len(launches) == n_launches
    assert Counter(RAW_GPU_KINDS[e["cat"]] for e in replayed) == per_kind


@pytest.mark.parametrize("reader", ["auto", "python"])
@pytest.mark.parametrize("case", CASES)
def test_every_replayed_activity_is_linked_to_its_graph_launch(case, reader, raws, tmp_path):
    """Same kind, name, times, stream and correlation id as in the JSON, and linked to the graph
    launch call with that correlation id, which starts at the launch's ts on the launch's thread."""
    db = convert(CASES[case], tmp_path / "g.duckdb", reader)
    got = Counter(row[:-2] for row in db.execute(REPLAYS_SQL).fetchall())
    expected = raw_replay_rows(raws[case])
    assert sum(expected.values()) == sum(EXPECTED[case][1].values())
    assert got == expected
    # (got == expected also says no other GPU span is linked to a graph launch.) None twice:
    links, linked_spans = db.execute("SELECT count(*), count(DISTINCT gpu_span_id) FROM launches").fetchone()
    assert links == linked_spans


@pytest.mark.parametrize("case", CASES)
def test_replays_are_charged_to_the_ranges_around_their_launch(case, raws, converted):
    """span_ancestors of every replayed activity: exactly its graph launch call and the
    cpu_op/user_annotation ranges that contain that call on its thread in the JSON (the
    CompiledFunction op, the ## forward ## annotations and ProfilerStep#N of the V100 forward
    graphs; vLLM's execute_… step annotation on the MI300X)."""
    db = converted(CASES[case])
    enclosing = raw_enclosing_ranges(raws[case])
    ancestors = defaultdict(set)
    for span_id, name, start in db.execute(
        f"""SELECT r.span_id, anc.name, anc.start_ns FROM ({REPLAYS_SQL}) AS r
            JOIN span_ancestors x ON x.run_id = r.run_id AND x.span_id = r.span_id
            JOIN spans anc ON anc.run_id = x.run_id AND anc.span_id = x.ancestor_id"""
    ).fetchall():
        ancestors[span_id].add((name, start))
    replays = db.execute(f"SELECT span_id, correlation_id FROM ({REPLAYS_SQL})").fetchall()
    assert len(replays) == sum(EXPECTED[case][1].values())
    for span_id, corr in replays:
        assert ancestors[span_id] == enclosing[corr], (span_id, corr)
    if case == "kineto_cuda_graphs_v100_2022":
        # The forward graphs run inside a step: their replays reach ProfilerStep#N.
        steps = {corr for corr, ranges in enclosing.items() if any(n.startswith("ProfilerStep#") for n, _ in ranges)}
        assert len(steps) == 6


def test_kernel_totals_match_the_json_and_hta(raws, converted, tmp_path):
    """All kernels, and the kernels of each graph replay: count and time as in the JSON; per kernel
    name as HTA's get_gpu_kernel_breakdown (integer µs trace: no rounding on either side)."""
    raw = raws["kineto_cuda_graphs_v100_2022"]
    db = converted(V100)
    kernels = [e for e in raw["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    assert db.execute("SELECT count(*), sum(end_ns - start_ns) FROM spans WHERE kind = 'kernel'").fetchone() == (
        len(kernels),
        sum(_ns(e["dur"]) for e in kernels),
    )
    launches, replayed = raw_graph_replays(raw)
    per_launch = Counter()
    for e in replayed:
        if e["cat"] == "kernel":
            per_launch[_ns(launches[e["args"]["correlation"]]["ts"])] += _ns(e["dur"])
    got = dict(
        db.execute(f"""SELECT launch_start_ns, sum(end_ns - start_ns) FROM ({REPLAYS_SQL})
                              WHERE kind = 'kernel' GROUP BY launch_start_ns""").fetchall()
    )
    assert got == dict(per_launch)
    assert sum(per_launch.values()) == 265_747_000  # a third of the 801.9 ms of kernel time

    # HTA keeps only the kernels whose launch call is in the trace (9,330 of the 9,876 here: the
    # others were launched before the profiler's window opened), so the same kernels of ours.
    hta = hta_kernel_reference(V100, tmp_path)
    assert not hta["rounds"]
    ours = {
        name: (count, total_ns / 1000)
        for name, count, total_ns in db.execute(
            """SELECT k.name, count(*), sum(k.end_ns - k.start_ns) FROM spans k
           JOIN launches l ON l.run_id = k.run_id AND l.gpu_span_id = k.span_id
           WHERE k.kind = 'kernel' GROUP BY k.name"""
        ).fetchall()
    }
    assert sum(count for count, _ in ours.values()) == sum(count for count, _ in hta["kernels"].values()) == 9330
    assert ours == hta["kernels"]
    for name, total_us in hta["breakdown"].items():
        assert ours[name][1] == total_us, name


@pytest.mark.parametrize("keep_flows", [True, False], ids=["flows", "external_id"])
@pytest.mark.parametrize("reader", ["auto", "python"])
def test_same_links_without_correlation_args(keep_flows, reader, raws, converted, tmp_path):
    """A copy without args.correlation (and, for external_id, without flows): the launch flow on
    each replayed activity, or the External id it shares with its graph launch, gives the same
    links. Before the graph rule, the External id fallback linked only the first activity of
    each replay (12 of 5,046 here)."""
    raw = json.loads(json.dumps(raws["kineto_cuda_graphs_v100_2022"], default=float))  # integer µs: exact
    for event in raw["traceEvents"]:
        if not keep_flows and event.get("ph") in ("s", "f"):
            event["ph"] = "dropped"
        event.get("args", {}).pop("correlation", None)
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(raw))
    pairs_sql = """SELECT g.kind, g.name, g.start_ns, g.stream_id, a.name, a.start_ns, a.tid FROM launches l
                   JOIN spans a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
                   JOIN spans g ON g.run_id = l.run_id AND g.span_id = l.gpu_span_id
                   WHERE a.name = 'cudaGraphLaunch' ORDER BY ALL"""
    expected = converted(V100).execute(pairs_sql).fetchall()
    assert len(expected) == 5046
    assert convert(stripped, tmp_path / "s.duckdb", reader).execute(pairs_sql).fetchall() == expected


@pytest.mark.parametrize("reader", ["auto", "python"])
def test_graph_and_node_ids_are_kept_for_replayed_work_only(reader, raws, tmp_path):
    """Kineto 2026+ writes "graph id"/"graph node id" on every GPU activity (0 outside a graph).
    On a copy of the V100 trace with them written in as Kineto does: the replayed activities keep
    theirs in span_args, the eager ones (0) get none."""
    raw = json.loads(json.dumps(raws["kineto_cuda_graphs_v100_2022"], default=float))  # integer µs: exact
    launches, _ = raw_graph_replays(raw)
    graph_of = {corr: 100 + i for i, corr in enumerate(sorted(launches))}
    node = Counter()
    expected = Counter()
    for e in raw["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in RAW_GPU_KINDS:
            graph = graph_of.get(e["args"].get("correlation"), 0)
            node[graph] += 1
            e["args"]["graph id"] = graph
            e["args"]["graph node id"] = node[graph] if graph else 0
            if graph:
                expected[(e["name"], _ns(e["ts"]), str(graph), str(node[graph]))] += 1
    path = tmp_path / "with_graph_ids.json"
    path.write_text(json.dumps(raw))
    db = convert(path, tmp_path / "g.duckdb", reader)
    rows = db.execute("""SELECT s.name, s.start_ns, max(a.value) FILTER (WHERE a.key = 'graph id'),
                                max(a.value) FILTER (WHERE a.key = 'graph node id')
                         FROM span_args a JOIN spans s ON s.run_id = a.run_id AND s.span_id = a.span_id
                         WHERE a.key IN ('graph id', 'graph node id') GROUP BY s.span_id, s.name, s.start_ns""").fetchall()
    assert sum(expected.values()) == 5046
    assert Counter(rows) == expected


def test_nsys_graph_node_ids_kept(tmp_path):
    """nsys exports carry graphId/graphNodeId on kernels (NULL outside a graph; the real fixtures
    have no graph launches, so no span_args). On a copy of the H100 export with the ids written
    into 5 kernel rows, those 5 kernels get them as span_args, under Kineto's keys."""
    src = NSYS_EXPORTS["nsys_2026_pytorch_2xh100"]
    copy = tmp_path / src.name
    copy.write_bytes(src.read_bytes())
    with sqlite3.connect(copy) as con:
        rows = con.execute("SELECT rowid, start, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start LIMIT 5").fetchall()
        assert con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE graphId IS NOT NULL OR graphNodeId IS NOT NULL").fetchone()[0] == 0
        for i, (rowid, _, _) in enumerate(rows):
            con.execute("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET graphId = 3, graphNodeId = ? WHERE rowid = ?", [100 + i, rowid])
    real = convert(src, tmp_path / "real.duckdb")
    assert real.execute("SELECT count(*) FROM span_args WHERE key IN ('graph id', 'graph node id')").fetchone()[0] == 0
    db = convert(copy, tmp_path / "graph.duckdb")
    got = db.execute("""SELECT s.start_ns, s.correlation_id, a.key, a.value FROM span_args a
                        JOIN spans s ON s.run_id = a.run_id AND s.span_id = a.span_id
                        WHERE a.key IN ('graph id', 'graph node id') ORDER BY ALL""").fetchall()
    expected = sorted(
        [(start, corr, "graph id", "3") for _, start, corr in rows]
        + [(start, corr, "graph node id", str(100 + i)) for i, (_, start, corr) in enumerate(rows)]
    )
    assert got == expected
