"""Which JSON parser the Kineto converter streams with, and what the whole conversion costs.

Builds a bigger trace from the largest fixture (the A100 rank-3 trace, 35 MB of JSON): its
events repeated SCALE times, each copy shifted past the previous one in time and in correlation
ids, written as plain and gzip JSON. Then, each in a fresh process (peak RSS = that process's
ru_maxrss), on the same file:

  ijson_yajl2c     ijson.items(gzip stream, 'traceEvents.item') -- what convert/kineto/python_reader.py uses
  orjson_whole     orjson.loads of the whole decompressed file
  json_whole       json.load (the standard library)
  duckdb_read_json DuckDB read_json + unnest(traceEvents) -> count
  xsp_convert      xsp-trace's full conversion into DuckDB (parse, map, insert, correlate)
  hta              Holistic Trace Analysis 0.5 load + kernel breakdown (the peer users run today)

Usage: python bench/kineto_parser_choice.py [--scale 4] [--skip hta]
Prints a Markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "kineto_2022_integer_us_rank3" / "hta_a100_rank3_of_8_2022.json.gz"

MEASURE = {
    "ijson_yajl2c": """
import gzip, ijson
assert ijson.backend == 'yajl2_c', ijson.backend
n = sum(1 for _ in ijson.items(gzip.open(PATH), 'traceEvents.item', use_float=False))
""",
    "orjson_whole": """
import gzip, orjson
n = len(orjson.loads(gzip.open(PATH).read())['traceEvents'])
""",
    "json_whole": """
import gzip, json
n = len(json.load(gzip.open(PATH))['traceEvents'])
""",
    "duckdb_read_json": """
import duckdb
n = duckdb.execute("SELECT count(*) FROM (SELECT unnest(traceEvents) FROM read_json(?, maximum_object_size=2000000000))", [PATH]).fetchone()[0]
""",
    "xsp_convert": """
import sys, tempfile, pathlib
sys.path.insert(0, ROOT)
from xsp_trace.convert import ConvertOptions, convert_files
out = pathlib.Path(tempfile.mkdtemp()) / 'bench.duckdb'
convert_files([pathlib.Path(PATH)], out, ConvertOptions())
import duckdb
n = duckdb.connect(str(out), read_only=True).execute('SELECT count(*) FROM spans').fetchone()[0]
""",
    "hta": """
import logging, os, shutil, tempfile
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(PATH, os.path.join(folder, 'rank3.json.gz'))
ta = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
_, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
n = len(ta.t.get_trace(3))
""",
}


def build_scaled(scale: int, folder: Path) -> tuple[Path, int]:
    """The fixture's events SCALE times (bench/scaled_inputs.py); returns (gzip path, JSON bytes)."""
    sys.path.insert(0, str(ROOT / "bench"))
    from scaled_inputs import kineto_copies, uncompressed_bytes

    path = kineto_copies(scale, folder, FIXTURE)
    return path, uncompressed_bytes(path)


def measure(name: str, path: Path) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of one measurement in a fresh Python process."""
    code = f"PATH = {str(path)!r}; ROOT = {str(ROOT)!r}\n" + MEASURE[name]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{name} failed: {proc.stderr.read().decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scale", type=int, default=4)
    parser.add_argument("--skip", nargs="*", default=[])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path, size = build_scaled(args.scale, Path(tmp))
        mb = size / 1e6
        print(f"trace: {FIXTURE.name} x{args.scale} = {mb:.0f} MB JSON ({path.stat().st_size / 1e6:.0f} MB gzip)\n")
        baseline, _ = measure("ijson_yajl2c", path)
        rows = []
        for name in MEASURE:
            if name in args.skip:
                continue
            seconds, rss = measure(name, path)
            rows.append((name, seconds, rss))
        print("| reader | time (s) | MB/s of JSON | peak RSS (MiB) | time vs ijson |")
        print("| --- | --- | --- | --- | --- |")
        for name, seconds, rss in rows:
            print(f"| {name} | {seconds:.1f} | {mb / seconds:.0f} | {rss:.0f} | {seconds / baseline:.2f}x |")


if __name__ == "__main__":
    main()
