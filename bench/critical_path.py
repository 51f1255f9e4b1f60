"""Critical path: xsp-trace's walk (analyze -a critical_path_summary, all steps) against HTA 0.5's
critical_path_analysis (one step per call, networkx) on the same real trace, in the same run.

    python3 bench/critical_path.py --hta-python /tmp/hta/bin/python

HTA runs in its own virtual environment (HolisticTraceAnalysis 0.5.0, pandas < 3: see
bench/hta_critical_path_reference.py). Each side is a fresh process timed with its peak RSS by
bench/children.py's launcher; xsp-trace reads a database converted beforehand (the conversion is
measured in bench/run.py), HTA parses the JSON itself (its load is part of what a user waits for,
and is shown apart).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from children import measure

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "data" / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"

HTA_SCRIPT = """
import shutil, sys, tempfile, time
from pathlib import Path
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
shutil.copyfile(sys.argv[1], Path(folder) / "rank-3.json.gz")
t0 = time.perf_counter()
analysis = TraceAnalysis(trace_dir=folder)
t1 = time.perf_counter()
steps = int(sys.argv[2])
failed = []
for i in range(steps):
    try:
        graph, ok = analysis.critical_path_analysis(rank=3, annotation="ProfilerStep", instance_id=i)
        assert ok
    except Exception as exc:  # HTA 0.5 fails on some steps of this trace: counted, not hidden
        failed.append(f"{i}: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}")
t2 = time.perf_counter()
print(f"hta load {t1 - t0:.2f} s, critical path of {steps} steps {t2 - t1:.2f} s, failed: {failed}")
"""

XSP_SCRIPT = """
import sys, time
from xsp_trace.analyze import AnalysisOptions, open_session, run_analysis
t0 = time.perf_counter()
con = open_session(sys.argv[1], AnalysisOptions())
result = run_analysis(con, "critical_path_summary")
print(f"xsp-trace session + critical path of {len(result.rows)} steps {time.perf_counter() - t0:.2f} s")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hta-python", required=True, help="python of a venv with HolisticTraceAnalysis 0.5.0 and pandas < 3")
    parser.add_argument("--steps", type=int, default=6)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        database = Path(folder) / "rank3.duckdb"
        convert = measure([sys.executable, "-c", "from xsp_trace.cli import main; main()", "convert", str(TRACE), "-o", str(database), "-q"])
        hta = measure([args.hta_python, "-W", "ignore", "-c", HTA_SCRIPT, str(TRACE), str(args.steps)], stdout=subprocess.PIPE)
        xsp = measure([sys.executable, "-c", XSP_SCRIPT, str(database)], stdout=subprocess.PIPE)
    print("| command | wall | peak RSS | what it says |\n| --- | ---: | ---: | --- |")
    for name, m in (
        ("xsp-trace convert", convert),
        ("HTA 0.5: load + critical_path_analysis per step", hta),
        ("xsp-trace: session + critical path", xsp),
    ):
        print(f"| {name} | {m['seconds']:.2f} s | {m['peak_mib']:.0f} MiB | {m.get('stdout', '').strip()} |")
    print(
        f"HTA / xsp-trace critical path: {hta['seconds'] / xsp['seconds']:.1f}x; HTA / (convert + critical path): {hta['seconds'] / (convert['seconds'] + xsp['seconds']):.1f}x"
    )


if __name__ == "__main__":
    main()
