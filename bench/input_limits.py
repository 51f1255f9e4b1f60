"""Hostile inputs against convert's limits (docs/robustness.md, Limits): each converted by
`xsp-trace convert` as a fresh process with a private $TMPDIR; prints wall seconds, exit code,
the stderr line, the peak bytes under $TMPDIR (sampled every 20 ms) and the child's peak RSS.

    python -m bench.input_limits [--scratch DIR] [CASE ...]

Cases: threads_1e6 (10^6 threads, two nested ops each), string_1g (a 1 GiB string, plain JSON),
string_3g_gz (3 GiB string, gzip), whitespace_5g_gz (5 GiB of whitespace in the events, gzip),
events_5g_gz (5 GiB of events alike, gzip); a case name with `:off` passes --max-gzip-ratio 0.
"""

from __future__ import annotations

import argparse
import gzip
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVENT = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 10, "dur": 2}'
HEAD = b'{"schemaVersion": 1, "traceEvents": [' + EVENT
TAIL = b'], "traceName": "bomb"}'
MEMBER_BYTES = 16 << 20


def _gzip_repeated(path: Path, head: bytes, body: bytes, total: int, tail: bytes) -> None:
    member = gzip.compress(body, 9)
    with open(path, "wb") as f:
        f.write(gzip.compress(head))
        for _ in range(total // len(body)):
            f.write(member)
        f.write(gzip.compress(tail))


def make(case: str, scratch: Path) -> Path:
    path = scratch / {"threads_1e6": "threads.json", "string_1g": "string.json"}.get(case, f"{case}.json.gz")
    if path.exists():
        return path
    if case == "threads_1e6":
        with open(path, "w") as f:
            f.write('{"traceEvents": [\n')
            for i in range(1_000_000):
                tid, ts = 1000 + i, 100 + i
                f.write(f'{{"ph": "X", "cat": "cpu_op", "name": "outer", "pid": 7, "tid": {tid}, "ts": {ts}, "dur": 10}},\n')
                f.write(f'{{"ph": "X", "cat": "cpu_op", "name": "inner", "pid": 7, "tid": {tid}, "ts": {ts + 2}, "dur": 5}},\n')
                f.write(f'{{"ph": "M", "name": "thread_name", "pid": 7, "tid": {tid}, "args": {{"name": "worker {i}"}}}}')
                f.write(",\n" if i < 999_999 else "\n]}\n")
    elif case == "string_1g":
        with open(path, "wb") as f:
            f.write(HEAD + b', {"ph": "X", "cat": "cpu_op", "name": "')
            for _ in range(64):
                f.write(b"x" * MEMBER_BYTES)
            f.write(b'", "pid": 1, "tid": 1, "ts": 20, "dur": 1}' + TAIL)
    elif case == "string_3g_gz":
        _gzip_repeated(path, HEAD + b', {"ph": "X", "name": "', b"x" * MEMBER_BYTES, 3 << 30, b'", "pid": 1, "tid": 1, "ts": 20, "dur": 1}' + TAIL)
    elif case == "whitespace_5g_gz":
        _gzip_repeated(path, HEAD, b" \n\t " * (MEMBER_BYTES // 4), 5 << 30, TAIL)
    elif case == "events_5g_gz":
        body = (b", " + EVENT) * (MEMBER_BYTES // (len(EVENT) + 2))
        _gzip_repeated(path, HEAD, body, 5 << 30, TAIL)
    else:
        raise SystemExit(f"unknown case {case}")
    return path


def _tree_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def run(case: str, scratch: Path) -> None:
    name, _, flag = case.partition(":")
    source = make(name, scratch)
    tmpdir = Path(tempfile.mkdtemp(prefix="tmpdir-", dir=scratch))
    out = scratch / f"{name}.duckdb"
    args = [sys.executable, "-m", "xsp_trace.cli", "convert", str(source), "-o", str(out), "--overwrite", "-q", "-j", "1"]
    if flag == "off":
        args += ["--max-gzip-ratio", "0"]
    env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT)}
    peak, stop = [0], threading.Event()

    def watch() -> None:
        while not stop.wait(0.02):
            peak[0] = max(peak[0], _tree_bytes(tmpdir))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - started
    stop.set()
    watcher.join()
    rss_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    lines = proc.stderr.strip().splitlines()
    left = sorted(p.name for p in tmpdir.iterdir())
    print(
        f"{case}: {source.stat().st_size / 2**20:.1f} MiB on disk, exit {proc.returncode}, {seconds:.1f} s, "
        f"$TMPDIR peak {peak[0] / 2**20:.1f} MiB, left {left}, peak RSS (max of children so far) {rss_mib:.0f} MiB, "
        f"stderr {len(lines)} line(s): {lines[-1] if lines else proc.stdout.strip()}",
        flush=True,
    )
    shutil.rmtree(tmpdir, ignore_errors=True)
    out.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()) / "xsp-input-limits")
    parser.add_argument("cases", nargs="*", default=["threads_1e6", "string_1g", "string_3g_gz", "whitespace_5g_gz", "events_5g_gz"])
    opts = parser.parse_args()
    opts.scratch.mkdir(parents=True, exist_ok=True)
    for case in opts.cases:
        run(case, opts.scratch)


if __name__ == "__main__":
    main()
