"""Is one torch-tool capture right? M-run model latency against the un-instrumented loop (CPU).

Runs several independent leveled captures (`xsp-trace capture --tool torch`, levels M,ML,MLG) of
the held-out example `capture/examples/transformer_2block.py` with the capture code of a chosen
checkout (--checkout; e.g. main before a change and this checkout after it), and reports per
capture and batch size, read straight from the run directory (session.json, trace.json), not
from our tables:

  * in-process ratio = trimmed mean of the M run's model ranges (trace.json, what `analyze`
    reports as the model latency) / trimmed mean of the M run's own un-instrumented loop
    (session.json); 1 is right. Beside it a seeded percentile-bootstrap 95 % interval (2,000
    resamples; paired by iteration when the capture interleaves the two loops).
  * pooled ratio = the same model latency / the un-instrumented loops of the M, ML and MLG
    processes pooled (the baseline `level_overhead` used before it became per run).
  * M plain-timer overhead: instrumented / un-instrumented loop of the M process, both timed
    with the same plain timer (queries/analyses/capture_level_overhead.sql).

Trimmed mean as queries/lib/stats.sql's xsp_trimmed_mean (trim 0.2). Prints markdown for BENCHMARKS.md
and, with --json, every figure.

    OMP_NUM_THREADS=1 python -m bench.capture.stability --checkout main=/path/to/main --checkout after=. \
        --captures 5 --iterations 30
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
EXAMPLE = CHECKOUT / "capture" / "examples" / "transformer_2block.py"


def trimmed_mean(values, frac: float = 0.2) -> float:
    """xsp_trimmed_mean: n > 3: drop floor(n frac) from the bottom and max(floor(n frac), 1) from the top."""
    v = sorted(values)
    n = len(v)
    if n < 3:
        return statistics.fmean(v)
    if n == 3:
        return float(v[1])
    k = math.floor(n * frac)
    return statistics.fmean(v[k : min(n - 1, n - k)])


def model_ranges_ns(trace: Path) -> list[float]:
    """Durations of the xsp.model: ranges in a Kineto trace, ns, in start order."""
    events = json.loads(trace.read_text())["traceEvents"]
    ranges = sorted((e["ts"], e["dur"]) for e in events if e.get("ph") == "X" and str(e.get("name", "")).startswith("xsp.model:"))
    return [dur * 1000.0 for _, dur in ranges]


def bootstrap_ratio(numerator, denominator, paired: bool, resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile interval of trimmed_mean(numerator) / trimmed_mean(denominator)."""
    rng = random.Random(seed)
    n, d = len(numerator), len(denominator)
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        jdx = idx if paired and n == d else [rng.randrange(d) for _ in range(d)]
        ratios.append(trimmed_mean([numerator[i] for i in idx]) / trimmed_mean([denominator[j] for j in jdx]))
    ratios.sort()
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def capture(checkout: Path, out: Path, args) -> None:
    env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    command = [
        sys.executable,
        "-m",
        "xsp_trace.cli",
        "capture",
        "-q",
        "--tool",
        "torch",
        "--levels",
        "M,ML,MLG",
        "--batch-sizes",
        args.batch_sizes,
        "-o",
        str(out),
    ]
    if args.iterations:
        command += ["--iterations", str(args.iterations)]
    if args.warmup is not None:
        command += ["--warmup", str(args.warmup)]
    subprocess.run(command + ["--", sys.executable, str(EXAMPLE)], check=True, env=env, cwd=checkout)


def figures(run_dir: Path) -> list[dict]:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    sessions = {}
    for entry in manifest["runs"]:
        session = json.loads((run_dir / entry["session"]).read_text())
        sessions[(entry["level"], entry["batch_size"])] = (session, run_dir / entry["trace"])
    rows = []
    for batch in sorted({b for _, b in sessions}):
        session, trace = sessions[("M", batch)]
        lat = session["latencies_ns"]
        plain, timed = lat["uninstrumented"], lat["instrumented"]
        ranges = model_ranges_ns(trace)
        interleaved = set(lat.get("uninstrumented_phase", [])) == {"interleaved"}
        pooled = [x for (lv, b), (s, _) in sessions.items() if b == batch for x in s["latencies_ns"]["uninstrumented"]]
        base = trimmed_mean(plain)
        low, high = bootstrap_ratio(ranges, plain, paired=interleaved)
        rows.append(
            {
                "batch": batch,
                "iterations": len(ranges),
                "interleaved": interleaved,
                "uninstrumented_ms": base / 1e6,
                "m_model_ms": trimmed_mean(ranges) / 1e6,
                "ratio_in_process": trimmed_mean(ranges) / base,
                "ratio_low": low,
                "ratio_high": high,
                "ratio_pooled": trimmed_mean(ranges) / trimmed_mean(pooled),
                "m_timer_overhead": trimmed_mean(timed) / base,
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--checkout",
        action="append",
        default=None,
        metavar="LABEL=PATH",
        help="checkout whose capture code runs (repeatable; captures alternate between them, so machine load hits each alike); default: this one",
    )
    parser.add_argument("--captures", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=None, help="default: the capture's own default")
    parser.add_argument("--warmup", type=int, default=None, help="default: the capture's own default")
    parser.add_argument("--batch-sizes", default="1,4")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    checkouts = []
    for text in args.checkout or [f"{CHECKOUT.name}={CHECKOUT}"]:
        label, _, path = text.rpartition("=")
        checkouts.append((label or Path(path).name, Path(path).resolve()))
    results = []
    print(
        "| code | capture | load avg | batch | iterations | un-instrumented ms | M model ms "
        "| M / un-instr. (in-process) [95 % bootstrap] | M / un-instr. (pooled across processes) "
        "| M plain-timer instr. / un-instr. |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for number in range(1, args.captures + 1):
        for label, path in checkouts:
            with tempfile.TemporaryDirectory() as tmp:
                run_dir = Path(tmp) / "run"
                load_before = os.getloadavg()[0]
                capture(path, run_dir, args)
                load = (load_before + os.getloadavg()[0]) / 2
                for row in figures(run_dir):
                    row.update(code=label, capture=number, load=load)
                    results.append(row)
                    print(
                        f"| {label} | {number} | {load:.1f} | {row['batch']} | {row['iterations']} | {row['uninstrumented_ms']:.3f} "
                        f"| {row['m_model_ms']:.3f} | {row['ratio_in_process']:.3f} [{row['ratio_low']:.3f} .. {row['ratio_high']:.3f}] "
                        f"| {row['ratio_pooled']:.3f} | {row['m_timer_overhead']:.3f} |",
                        flush=True,
                    )
    for label, _ in checkouts:
        for batch in sorted({r["batch"] for r in results}):
            mine = [r for r in results if r["batch"] == batch and r["code"] == label]
            for key in ("ratio_in_process", "ratio_pooled"):
                values = [r[key] for r in mine]
                print(
                    f"{label} batch {batch} {key}: median {statistics.median(values):.3f}, "
                    f"range {min(values):.3f} .. {max(values):.3f} over {len(values)} captures; "
                    f"widest bootstrap interval {max(r['ratio_high'] - r['ratio_low'] for r in mine):.3f}"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
