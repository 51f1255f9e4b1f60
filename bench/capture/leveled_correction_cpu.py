"""Benchmark: does leveled correction recover the un-instrumented model latency? (CPU, no GPU)

Runs a leveled capture (M, ML, MLG with torch.profiler, the capture's own example model), converts
it, and compares, per batch size:
  * corrected model latency  = trimmed mean of the M run's model ranges (xsp_model_latency),
  * naive model latency      = trimmed mean of the MLG run's model ranges (what one profiled run gives),
against the un-instrumented loop the capture times with a plain timer in the same processes
(capture_latencies, loop = 'uninstrumented', of the M run's own process, before and after its
instrumented loop: the peer measured in the same run). Trimmed means (trim 0.2) and medians.
Prints one markdown table row per batch size for BENCHMARKS.md.

    python -m bench.capture.leveled_correction_cpu --iterations 200 --batch-sizes 1,8 --repeats 3
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from xsp_trace.analyze.session import AnalysisOptions, open_session
from xsp_trace.analyze.sql_library import include

QUERY = """
WITH baseline AS (
    SELECT r.batch_size, xsp_trimmed_mean(list(c.latency_ns)) AS ns, median(c.latency_ns) AS med
    FROM xsp_runs r JOIN capture_latencies c USING (run_id)
    WHERE c.loop = 'uninstrumented' AND r.level = 'M' GROUP BY r.batch_size
), naive AS (
    SELECT r.batch_size, xsp_trimmed_mean(list(i.end_ns - i.start_ns)) AS ns, median(i.end_ns - i.start_ns) AS med
    FROM xsp_runs r JOIN xsp_inferences i USING (run_id) WHERE r.level = 'MLG' GROUP BY r.batch_size
)
SELECT m.batch_size, b.ns, b.med, m.trimmed_mean_ns, m.median_ns, m.corrected, n.ns, n.med
FROM xsp_model_latency m JOIN baseline b USING (batch_size) JOIN naive n USING (batch_size)
ORDER BY m.batch_size
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--batch-sizes", default="1,8")
    parser.add_argument("--repeats", type=int, default=3, help="independent captures (each a row per batch size)")
    parser.add_argument("--script", default="xsp_trace.capture.examples.tiny_cnn")
    args = parser.parse_args()
    print(
        "| capture | batch | un-instrumented ms (trimmed / median) | corrected M ms | corrected / un-instr. "
        "(trimmed / median) | naive MLG ms | naive / un-instr. (trimmed / median) |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for repeat in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = Path(tmp) / "run"
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "xsp_trace.cli",
                    "capture",
                    "-q",
                    "--levels",
                    "M,ML,MLG",
                    "--iterations",
                    str(args.iterations),
                    "--warmup",
                    str(args.warmup),
                    "--batch-sizes",
                    args.batch_sizes,
                    "-o",
                    str(run_dir),
                    "--",
                    sys.executable,
                    "-m",
                    args.script,
                ],
                check=True,
            )
            db = Path(tmp) / "run.duckdb"
            subprocess.run(
                [sys.executable, "-m", "xsp_trace.cli", "convert", "-q", str(run_dir), "-o", str(db)], check=True, stdout=subprocess.DEVNULL
            )
            con = open_session(db, AnalysisOptions())
            include(con, "lib/latency")
            for batch, base, base_med, corr, corr_med, is_corrected, naive, naive_med in con.execute(QUERY).fetchall():
                assert is_corrected, "the model latency should come from the M run"
                print(
                    f"| {repeat + 1} | {batch} | {base / 1e6:.3f} / {base_med / 1e6:.3f} | {corr / 1e6:.3f} / {corr_med / 1e6:.3f} "
                    f"| {corr / base:.3f} / {corr_med / base_med:.3f} | {naive / 1e6:.3f} / {naive_med / 1e6:.3f} "
                    f"| {naive / base:.3f} / {naive_med / base_med:.3f} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
