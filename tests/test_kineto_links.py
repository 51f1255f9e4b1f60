"""Launch links and the stack above each kernel, checked against counts made from the raw JSON."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_UP, Decimal

import pytest

from kineto_cases import GPU_CASES, KINETO_TRACES, load_raw, raw_linked_kernel_count

pytestmark = pytest.mark.slow  # real traces

LINKED_KERNELS_SQL = """
    SELECT count(*) FROM launches l
    JOIN spans k ON k.run_id = l.run_id AND k.span_id = l.gpu_span_id AND k.kind = 'kernel'
    JOIN spans a ON a.run_id = l.run_id AND a.span_id = l.api_span_id AND a.kind = 'api'
    WHERE a.correlation_id = k.correlation_id AND a.pid = k.pid"""


def _ns(us) -> int:
    return int((Decimal(us) * 1000).to_integral_value(rounding=ROUND_HALF_UP))


@pytest.mark.parametrize("case", GPU_CASES)
def test_linked_kernels_equal_raw_count(case, converted):
    expected = raw_linked_kernel_count(load_raw(KINETO_TRACES[case]))
    assert expected > 0
    assert converted(KINETO_TRACES[case]).execute(LINKED_KERNELS_SQL).fetchone()[0] == expected


@pytest.mark.parametrize("keep_flows", [True, False], ids=["flow_ids", "external_id"])
def test_fallback_links_without_correlation_args(keep_flows, converted, tmp_path):
    """Without args.correlation, flows (2021-2022 traces) or External id (oldest) give the same links."""
    src = KINETO_TRACES["kineto_cuda_sync_alexnet"]  # integer µs, one launch per External id
    with gzip.open(src, "rt") as f:
        raw = json.load(f)  # integer µs timestamps: nothing is lost by floats here
    for event in raw["traceEvents"]:
        if not keep_flows and event.get("ph") in ("s", "f"):
            event["ph"] = "dropped"
        event.get("args", {}).pop("correlation", None)
    stripped = tmp_path / "stripped.json"
    stripped.write_text(json.dumps(raw))
    original = converted(src)
    db = converted(stripped)
    pairs_sql = """SELECT a.name, a.start_ns, g.name, g.start_ns FROM launches l
                   JOIN spans a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
                   JOIN spans g ON g.run_id = l.run_id AND g.span_id = l.gpu_span_id ORDER BY ALL"""
    expected = original.execute(pairs_sql).fetchall()
    assert len(expected) == 139
    assert db.execute(pairs_sql).fetchall() == expected


def test_kernel_inherits_the_ops_its_launch_ran_in(converted):
    """For each linked kernel, its ancestors are the launch call and every cpu_op/user_annotation
    that contains that call on its thread in the raw JSON."""
    path = KINETO_TRACES["kineto_2024_ns_resolution"]
    raw = load_raw(path)
    xs = [e for e in raw["traceEvents"] if e.get("ph") == "X"]
    launches = {e["args"]["correlation"]: e for e in xs if e.get("cat") == "cuda_runtime"}
    ranges: dict[tuple, list] = {}
    for e in xs:
        if e.get("cat") in ("cpu_op", "user_annotation"):
            ranges.setdefault((e["pid"], e["tid"]), []).append((_ns(e["ts"]), _ns(e["ts"] + e["dur"]), e["name"]))
    kernels = [e for e in xs if e.get("cat") == "kernel" and e["args"]["correlation"] in launches][::25]
    assert len(kernels) > 100
    db = converted(path)
    for kernel in kernels:
        launch = launches[kernel["args"]["correlation"]]
        lo, hi = _ns(launch["ts"]), _ns(launch["ts"] + launch["dur"])
        expected = {(name, s) for s, e, name in ranges[(launch["pid"], launch["tid"])] if s <= lo and hi <= e}
        expected.add((launch["name"], lo))
        got = db.execute(
            """SELECT anc.name, anc.start_ns FROM spans k
               JOIN span_ancestors a ON a.run_id = k.run_id AND a.span_id = k.span_id
               JOIN spans anc ON anc.run_id = a.run_id AND anc.span_id = a.ancestor_id
               WHERE k.kind = 'kernel' AND k.start_ns = ? AND k.correlation_id = ?""",
            [_ns(kernel["ts"]), kernel["args"]["correlation"]],
        ).fetchall()
        assert set(got) == expected, kernel["name"]
