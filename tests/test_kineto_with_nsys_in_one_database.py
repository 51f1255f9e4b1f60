"""An nsys export and a Kineto trace in one database: the same SQL answers for both runs.

Each run's answer is checked against that tool's own reference: `nsys stats gpukernsum` for
the nsys run, Holistic Trace Analysis's kernel table for the Kineto run.
"""

from __future__ import annotations

import pytest

from conftest import NSYS_EXPORTS, nsys_stats
from kineto_cases import KINETO_TRACES, hta_kernel_reference

pytestmark = pytest.mark.slow  # real traces

# One query for any source: per run and kernel name, count, total ns, and how many launches
# reach an op or annotation on the CPU.
PER_KERNEL_SQL = """
SELECT r.source_kind, s.name, count(*) AS n, sum(s.end_ns - s.start_ns) AS total_ns,
       count(l.api_span_id) AS linked
FROM spans s
JOIN runs r USING (run_id)
LEFT JOIN launches l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id
WHERE s.kind = 'kernel'
GROUP BY ALL
"""


def test_nsys_and_kineto_side_by_side(converted, tmp_path):
    nsys_path = NSYS_EXPORTS["nsys_2022_saxpy_mpi_a100"]
    kineto_path = KINETO_TRACES["kineto_cuda_sync_alexnet"]
    db = converted(nsys_path, kineto_path)
    assert db.execute("SELECT run_id, source_kind, tool FROM runs ORDER BY run_id").fetchall() == [
        (1, "nsys", "nsys"),
        (2, "kineto", "torch.profiler"),
    ]
    rows = db.execute(PER_KERNEL_SQL).fetchall()
    by_source = {"nsys": {}, "kineto": {}}
    for source, name, n, total_ns, linked in rows:
        by_source[source][name] = (n, total_ns, linked)

    # nsys run: nsys stats gpukernsum per name (instances, total ns), all kernels launched from the CPU.
    ref = nsys_stats(nsys_path, "gpukernsum", tmp_path / "nsys")
    expected_nsys: dict[str, list] = {}
    for row in ref:
        entry = expected_nsys.setdefault(row["Name"], [0, 0])
        entry[0] += int(row["Instances"])
        entry[1] += int(row["Total Time (ns)"])
    assert {k: (n, t) for k, (n, t, _) in by_source["nsys"].items()} == {k: tuple(v) for k, v in expected_nsys.items()}

    # Kineto run: HTA's kernel table (integer-µs trace, so HTA's µs are exact).
    hta = hta_kernel_reference(kineto_path, tmp_path / "hta")
    assert not hta["rounds"]
    assert {k: (n, t) for k, (n, t, _) in by_source["kineto"].items()} == {k: (n, int(us * 1000)) for k, (n, us) in hta["kernels"].items()}

    # Both runs link every kernel to its launch, through the same tables.
    for source in ("nsys", "kineto"):
        assert all(n == linked for n, _, linked in by_source[source].values()), source
    # Launch links and ancestry never cross runs.
    assert (
        db.execute("""SELECT count(*) FROM span_ancestors a JOIN spans s ON s.run_id = a.run_id AND s.span_id = a.ancestor_id""").fetchone()[0]
        == db.execute("SELECT count(*) FROM span_ancestors").fetchone()[0]
    )
