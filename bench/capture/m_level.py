"""What the M and ML levels cost per inference: median paired overhead, bootstrap interval.

Real leveled captures (`xsp-trace capture`, levels M and ML, batch 1, CPU, one thread) of small
models, per tool: torch, nsys (M and ML timed by the capture itself, the default) and nsys-nvtx
(`--nvtx-ranges`: nsys records them as NVTX ranges); for each run, read straight from its session.json:

  * paired difference = instrumented - un-instrumented latency of pair i (the capture alternates
    the two inference by inference, order flipped every pair, both timed with the same plain
    timer in the same process), in µs;
  * the order-balanced median: the mean of the median over the pairs run plain-first and the
    median over those run instrumented-first, with a seeded percentile-bootstrap 95 % interval
    (2,000 resamples of each half). The second inference of a pair runs faster than the first by
    tens of µs on this machine, A/A included (BENCHMARKS.md): the paired differences are two
    clusters, one per order, and the plain median over all pairs lands anywhere between them;
    the balanced figure cancels any effect of the position in the pair. The plain median is
    printed too;
  * per layer call (ML) = that figure / the layer calls of one inference (session layers'
    calls_per_inference summed);
  * --aa adds an A/A run per model and tool: the same capture and pairing, the instrumented
    inference timed exactly as the plain one and its model range recorded after the timer
    stopped: the pairing's own bias.

Captures alternate checkout by checkout (--checkout NAME=PATH: the capture side the profiled
script imports, e.g. main before a change and this checkout after it), tool by tool and model by
model, so the machine's noise reaches them alike; only differences inside one run are
meaningful on a shared machine. Prints a markdown table (BENCHMARKS.md) and, with --json, every
figure.

    OMP_NUM_THREADS=1 python -m bench.capture.m_level --iterations 200 --checkout main=/work/main --checkout after=.
    OMP_NUM_THREADS=1 python -m bench.capture.m_level --iterations 600 --aa --pieces   # + A/A rows and the pieces alone
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]


def _children_import(checkout: Path | str) -> None:
    """The children (this file run as a script: the profiled model, the range alone) import the
    capture side of `checkout`: it goes first on their PYTHONPATH."""
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")]))


MODELS = ("tiny_cnn", "mlp")


def build_model(name: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if name == "tiny_cnn":  # the capture's own example: conv, attention, 8 layers
        from xsp_trace.capture.examples.tiny_cnn import TinyNet, make_input

        return TinyNet().eval(), make_input
    if name == "mlp":  # 80 tiny layers: the per-layer-call cost dominates
        layers = []
        for _ in range(40):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        return nn.Sequential(*layers).eval(), lambda b: torch.randn(b, 64)
    raise SystemExit(f"unknown model {name}")


def median_interval(values: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Seeded percentile-bootstrap 95 % interval of the median of `values`."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(values[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def balanced_median(diffs: list[float]) -> float:
    """Mean of the medians of the even pairs (plain first) and the odd ones (instrumented first)."""
    return (statistics.median(diffs[0::2]) + statistics.median(diffs[1::2])) / 2


def balanced_interval(diffs: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Seeded percentile-bootstrap 95 % interval of balanced_median, each order resampled apart."""
    rng = random.Random(seed)
    halves = diffs[0::2], diffs[1::2]
    values = sorted(sum(statistics.median(h[rng.randrange(len(h))] for _ in h) for h in halves) / 2 for _ in range(resamples))
    return values[int(0.025 * resamples)], values[int(0.975 * resamples) - 1]


def paired_differences(session: dict) -> list[float]:
    """instrumented - un-instrumented latency (µs) of every pair of one run, in pair order."""
    lat = session["latencies_ns"]
    if set(lat["uninstrumented_phase"]) != {"interleaved"}:
        raise SystemExit(f"run {session['tool']} {session['level']} did not interleave its loops: no paired difference")
    return [(i - p) / 1000 for p, i in zip(lat["uninstrumented"], lat["instrumented"], strict=True)]


def paired_overhead(session: dict) -> dict:
    """Order-balanced median paired difference (µs) of one run, its interval, the plain median
    over all pairs with its interval, per layer call."""
    diffs = paired_differences(session)
    plain = session["latencies_ns"]["uninstrumented"]
    median = balanced_median(diffs)
    low, high = balanced_interval(diffs)
    all_low, all_high = median_interval(diffs)
    layer_calls = sum(layer.get("calls_per_inference") or 0 for layer in session.get("layers") or [])
    per_call = (lambda v: v / layer_calls) if layer_calls and session["level"] != "M" else (lambda v: None)
    return {
        "pairs": len(diffs),
        "uninstrumented_median_us": statistics.median(plain) / 1000,
        "overhead_median_us": median,
        "overhead_low_us": low,
        "overhead_high_us": high,
        "all_pairs_median_us": statistics.median(diffs),
        "all_pairs_low_us": all_low,
        "all_pairs_high_us": all_high,
        "plain_first_median_us": statistics.median(diffs[0::2]),
        "instrumented_first_median_us": statistics.median(diffs[1::2]),
        "layer_calls": layer_calls,
        "per_layer_call_us": per_call(median),
        "per_layer_call_low_us": per_call(low),
        "per_layer_call_high_us": per_call(high),
        "profiler_scope": session.get("profiler_scope"),
    }


def range_alone(pairs: int = 1000) -> dict:
    """In this process: median paired difference (µs, with interval) of an A/A control (plain vs
    plain inference of a small CNN) and of plain vs the same inside one NVTX model range, pairs
    interleaved with the order flipped every pair, as the capture does."""
    import resource

    import torch
    from torch import nn

    from xsp_trace.capture.ranges import RangeFactory

    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1), nn.ReLU(), nn.Flatten(), nn.Linear(2048, 10)
    ).eval()
    x = torch.randn(1, 3, 16, 16)
    push, pop = (lambda r: (r.push, r.pop))(RangeFactory(nvtx=True, torch=False)("xsp.model:aa"))
    clock = time.perf_counter_ns

    def plain() -> int:
        start = clock()
        model(x)
        return clock() - start

    def ranged() -> int:
        start = clock()
        push()
        try:
            model(x)
        finally:
            pop()
        return clock() - start

    result = {}
    with torch.inference_mode():
        for _ in range(100):
            model(x)
        for name, timed in (("A/A", plain), ("NVTX model range", ranged)):
            diffs = []
            for i in range(pairs):
                first, second = (plain, timed) if i % 2 == 0 else (timed, plain)
                a = first()
                resource.getrusage(resource.RUSAGE_SELF)  # what the capture does between the two
                b = second()
                diffs.append(((b - a) if i % 2 == 0 else (a - b)) / 1000)
            low, high = median_interval(diffs)
            result[name] = {"median_us": statistics.median(diffs), "low_us": low, "high_us": high}
    return result


def range_alone_under_nsys() -> dict:
    """range_alone in a child without a tool and in one recorded by nsys --trace=nvtx,osrt."""
    import subprocess

    from xsp_trace.capture.tools import NSYS_COMMON, find_tool

    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for tool in ("no tool", "nsys"):
            result = Path(tmp) / "aa.json"
            child = [sys.executable, str(Path(__file__).resolve()), "--range-alone-to", str(result)]
            if tool == "nsys":
                nsys = find_tool("nsys", None, "NSYS")
                if nsys is None:
                    continue
                child = [nsys, "profile", "--trace=nvtx,osrt", *NSYS_COMMON, "-o", str(Path(tmp) / "aa"), *child]
            for _ in range(3):  # nsys on a shared machine now and then fails to start (sem_open)
                done = subprocess.run(child, capture_output=True, text=True, timeout=900)
                if result.exists():
                    break
            if not result.exists():  # nsys may exit 1 for its report import while the child finished
                raise SystemExit(f"{tool}: the child wrote nothing (exit {done.returncode}): {done.stderr[-2000:]}")
            out[tool] = json.loads(result.read_text())
            result.unlink()
    return out


def capture(checkout: Path, model: str, tool: str, levels: list[str], iterations: int, out: Path, aa: bool = False) -> list[dict]:
    from xsp_trace.capture.runner import CaptureRequest, capture_levels

    command = [sys.executable, str(Path(__file__).resolve()), "--profiled-model", model] + (["--aa-child"] if aa else [])
    nvtx = tool == "nsys-nvtx"  # the nsys tool with --nvtx-ranges
    request = CaptureRequest(
        command=command, out=out, levels=levels, iterations=iterations, warmup=20, tools=["nsys" if nvtx else tool], nvtx_ranges=nvtx, overwrite=True
    )
    before = os.environ.get("PYTHONPATH")
    _children_import(checkout)
    try:
        manifest = capture_levels(request)
    finally:
        os.environ.pop("PYTHONPATH") if before is None else os.environ.update(PYTHONPATH=before)
    rows = []
    for entry in manifest["runs"]:
        session = json.loads((out / entry["session"]).read_text())
        level = entry["level"] + (" A/A" if aa else "")
        rows.append({"model": model, "tool": tool, "level": level, **paired_overhead(session)})
    return rows


def time_as_plain(session_module) -> None:
    """A/A: the capture's timed loop with the instrumented inference timed exactly as the plain
    one; its model range is recorded after the timer stopped (the runner checks every run's
    trace for model ranges)."""
    original = session_module._timed_loop

    def timed_loop(call, n, sync, model_range=None):
        latencies = original(call, n, sync)
        if model_range is not None:
            for _ in range(n):
                if model_range.timed_by_caller:
                    now = time.perf_counter_ns()
                    model_range.record(now, now)
                else:
                    model_range.push()
                    model_range.pop()
        return latencies

    session_module._timed_loop = timed_loop


def markdown(rows: list[dict]) -> str:
    out = [
        "| code | model | tool | level | repeat | pairs | un-instrumented median µs | overhead per inference, order-balanced median µs [95 % interval] "
        "| plain-first / instrumented-first medians µs | all-pairs median µs [95 % interval] | layer calls | per layer call µs [95 % interval] |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        per_call = "-"
        if r["per_layer_call_us"] is not None:
            per_call = f"{r['per_layer_call_us']:.2f} [{r['per_layer_call_low_us']:.2f} .. {r['per_layer_call_high_us']:.2f}]"
        out.append(
            f"| {r['code']} | {r['model']} | {r['tool']} | {r['level']} | {r['repeat']} | {r['pairs']} | {r['uninstrumented_median_us']:.0f} | "
            f"{r['overhead_median_us']:+.1f} [{r['overhead_low_us']:+.1f} .. {r['overhead_high_us']:+.1f}] | "
            f"{r['plain_first_median_us']:+.1f} / {r['instrumented_first_median_us']:+.1f} | "
            f"{r['all_pairs_median_us']:+.1f} [{r['all_pairs_low_us']:+.1f} .. {r['all_pairs_high_us']:+.1f}] | {r['layer_calls'] or '-'} | {per_call} |"
        )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200, help="interleaved pairs per run (>= 100)")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--tools", default="torch,nsys,nsys-nvtx")
    parser.add_argument("--levels", default="M,ML")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH of a checkout whose capture side is measured (default: this one)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--range-alone", action="store_true", help="only the A/A control and the NVTX model range alone, no tool and under nsys")
    parser.add_argument(
        "--pieces", action="store_true", help="after the captures, the pieces alone (bench/capture/m_level_pieces.py), same pairs and models"
    )
    parser.add_argument(
        "--aa", action="store_true", help="add an A/A run (level M, same pairing, nothing timed beyond the plain inference) per model and tool"
    )
    parser.add_argument("--profiled-model", help=argparse.SUPPRESS)  # child: the script the runner profiles
    parser.add_argument("--aa-child", action="store_true", help=argparse.SUPPRESS)  # child: time the instrumented inference as the plain one
    parser.add_argument("--range-alone-to", type=Path, help=argparse.SUPPRESS)  # child: range_alone into this JSON
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.range_alone:
        _children_import(CHECKOUT)
    if args.profiled_model:
        import torch

        from xsp_trace.capture import run

        if args.aa_child:
            from xsp_trace.capture import session as session_module

            time_as_plain(session_module)
        torch.set_num_threads(1)
        model, make_input = build_model(args.profiled_model)
        run(model, make_input, name=args.profiled_model)
        return
    if args.range_alone_to:
        args.range_alone_to.write_text(json.dumps(range_alone()))
        return
    if args.range_alone:
        print("| process | control | median paired difference µs [95 % interval] |\n| --- | --- | --- |")
        for tool, controls in range_alone_under_nsys().items():
            for name, r in controls.items():
                print(f"| {tool} | {name} | {r['median_us']:+.2f} [{r['low_us']:+.2f} .. {r['high_us']:+.2f}] |")
        return
    rows = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = [tuple(c.split("=", 1)) for c in args.checkout] or [("this", str(CHECKOUT))]
        for repeat in range(args.repeats):
            for model in args.models.split(","):
                for tool in args.tools.split(","):
                    for code, path in checkouts:
                        runs = [(args.levels.split(","), False)] + ([(["M"], True)] if args.aa else [])
                        for levels, aa in runs:
                            out = Path(tmp) / f"{code}-{model}-{tool}"
                            for row in _capture_retrying(Path(path).resolve(), model, tool, levels, args.iterations, out, aa):
                                rows.append({**row, "code": code, "repeat": repeat + 1})
                                print(markdown([rows[-1]]).splitlines()[-1], file=sys.stderr, flush=True)
                            loads.append(os.getloadavg()[0])
                            if args.json:  # after every capture, so an interrupted run keeps what it measured
                                args.json.write_text(json.dumps({"rows": rows, "iterations": args.iterations, "load_1min": loads}, indent=1))
    report: dict = {"rows": rows, "load_average": os.getloadavg(), "iterations": args.iterations, "load_1min": loads}
    print(markdown(rows))
    if args.pieces:  # the floor, in the same run: each piece alone in the capture's pairing (it prints its tables)
        print(flush=True)
        report.update(_pieces(args.models, args.iterations))
        loads.append(os.getloadavg()[0])
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(f"\nload average (1 min) before and after each capture: {min(loads):.2f} .. {max(loads):.2f}, median {statistics.median(loads):.2f}")


def _pieces(models: str, pairs: int) -> dict:
    """bench/capture/m_level_pieces.py in a child of its own (it imports this module: no cycle): {'pieces', 'warm'}."""
    import subprocess

    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "pieces.json"
        command = [sys.executable, "-m", "bench.capture.m_level_pieces", "--pairs", str(pairs), "--models", models, "--json", str(result)]
        subprocess.run(command, check=True, env={**os.environ, "PYTHONPATH": str(CHECKOUT)})
        data = json.loads(result.read_text())
    return {"pieces": data["rows"], "warm": data["warm"]}


def _capture_retrying(checkout: Path, model: str, tool: str, levels: list[str], iterations: int, out: Path, aa: bool) -> list[dict]:
    from xsp_trace.errors import InputError

    for attempt in (1, 2):  # nsys on a shared machine now and then fails to start (sem_open)
        try:
            return capture(checkout, model, tool, levels, iterations, out, aa)
        except InputError as exc:
            print(f"capture failed (attempt {attempt}): {exc}", file=sys.stderr, flush=True)
    return []


if __name__ == "__main__":
    main()
