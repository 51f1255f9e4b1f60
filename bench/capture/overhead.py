"""Capture overhead, measured side by side in one run (results: BENCHMARKS.md, "Capture overhead").

1. Cost of one range (open + close) in µs: NVTX push/pop in the xsp domain, and the user-scope
   record_function annotation, each against an empty loop of the same length (the peer), with no
   tool attached and under the tool that records it (nsys --trace=nvtx,osrt; the user-scope
   torch profiler).
2. Cost of one layer hook (pre + post hook with their ranges) per layer call in µs: the same
   forward with and without the layer hooks, interleaved, on an MLP of 80 small Linear layers and
   a CNN.
3. Each level's latency inflation vs the un-instrumented loop, from real leveled captures
   (xsp-trace capture, torch and nsys) of three models: trimmed mean (0.2) of the instrumented
   inferences over that of the un-instrumented ones in the same process.

    python -m bench.capture.overhead [--iterations 200] [--json out.json]

Runs single-threaded (torch.set_num_threads(1), OMP_NUM_THREADS=1) to keep the 2-core machine quiet.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[2]
# The children (this file run as a script under the capture or a tool) import this checkout's xsp_trace.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))


def build_model(name: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    if name == "mlp":  # 80 tiny layers: hook cost dominates
        layers = []
        for _ in range(40):
            layers += [nn.Linear(64, 64), nn.ReLU()]
        return nn.Sequential(*layers).eval(), lambda b: torch.randn(b, 64)
    if name == "cnn":  # 14 layers of real convolution work
        c = 16
        layers = [nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
        for _ in range(3):
            layers += [nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
        layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        return nn.Sequential(*layers, nn.Linear(c, 10)).eval(), lambda b: torch.randn(b, 3, 32, 32)
    if name == "transformer":  # 2 encoder layers: hooks also turn off the fused fast path
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), lambda b: torch.randn(b, 32, 64)
    raise SystemExit(f"unknown model {name}")


def _per_call_us(total_ns: float, peer_ns: float, n: int) -> float:
    return (total_ns - peer_ns) / n / 1000


def range_costs(n: int = 200_000, repeats: int = 5) -> dict:
    """µs per range open+close, minus the empty loop, best of `repeats` (this process, whatever records it)."""
    import torch

    from xsp_trace.capture.ranges import RangeFactory
    from xsp_trace.capture.session import _UserScopeProfiler

    nvtx_range = RangeFactory(nvtx=True, torch=False)("xsp.layer:0:bench:Linear")
    torch_range = RangeFactory(nvtx=False, torch=True)("xsp.layer:0:bench:Linear")

    def loop(rng) -> int:
        clock = time.perf_counter_ns
        start = clock()
        if rng is None:
            for _ in range(n):
                pass
        else:
            push, pop = rng.push, rng.pop
            for _ in range(n):
                push()
                pop()
        return clock() - start

    result = {}
    empty = min(loop(None) for _ in range(repeats))
    result["nvtx"] = _per_call_us(min(loop(nvtx_range) for _ in range(repeats)), empty, n)
    result["record_function_no_profiler"] = _per_call_us(min(loop(torch_range) for _ in range(repeats)), empty, n)
    small = n // 10  # the profiler keeps every event: fewer of them
    profiler = _UserScopeProfiler()
    with torch.inference_mode(), profiler:
        timings = []
        for _ in range(repeats):
            clock = time.perf_counter_ns
            start = clock()
            for _ in range(small):
                torch_range.push()
                torch_range.pop()
            timings.append(clock() - start)
    result["record_function_user_scope_profiler"] = _per_call_us(min(timings), empty / 10, small)
    return result


def hook_costs(model_name: str, iterations: int, tool: str) -> dict:
    """µs per layer call: forwards without hooks, with empty Python hooks (the peer: torch's own
    cost of calling hooks) and with xsp's layer hooks and ranges, interleaved."""
    import torch

    from xsp_trace.capture.hooks import ModelAnnotation, called_modules, select_layers
    from xsp_trace.capture.session import _UserScopeProfiler

    torch.set_num_threads(1)
    model, make_input = build_model(model_name)
    x = make_input(1)
    with torch.inference_mode():
        for _ in range(20):
            model(x)
        called = called_modules(model, lambda: model(x))
        annotation = ModelAnnotation(model, model_name, nvtx=tool == "nvtx", torch=tool == "torch", model_hook=False, called=called)
        modules = [m for _, m in select_layers(model, None, called)]
        calls = len(modules)

        def attach_empty():
            handles = []
            for m in modules:
                handles.append(m.register_forward_pre_hook(lambda m, a: None))
                handles.append(m.register_forward_hook(lambda m, a, o: None, always_call=True))
            return handles

        plain, empty, hooked = [], [], []
        profiler = _UserScopeProfiler() if tool == "torch" else None
        if profiler:
            profiler.__enter__()
        for _ in range(iterations):
            start = time.perf_counter_ns()
            model(x)
            plain.append(time.perf_counter_ns() - start)
            handles = attach_empty()
            start = time.perf_counter_ns()
            model(x)
            empty.append(time.perf_counter_ns() - start)
            for handle in handles:
                handle.remove()
            annotation.attach()
            start = time.perf_counter_ns()
            model(x)
            hooked.append(time.perf_counter_ns() - start)
            annotation.remove()
        if profiler:
            profiler.__exit__(None, None, None)
    p, e, h = statistics.median(plain), statistics.median(empty), statistics.median(hooked)
    return {
        "layers": calls,
        "plain_median_us": p / 1000,
        "empty_hooks_median_us": e / 1000,
        "xsp_hooks_median_us": h / 1000,
        "empty_hooks_per_layer_call_us": (e - p) / calls / 1000,
        "xsp_hooks_per_layer_call_us": (h - p) / calls / 1000,
        "xsp_hooks_inflation_pct": 100 * (h / p - 1),
    }


def _trim_mean(values, cut=0.2) -> float:
    values = sorted(values)
    k = int(cut * len(values))
    kept = values[k : len(values) - k]
    return sum(kept) / len(kept)


def level_inflation(model_name: str, iterations: int, work: Path, repeat: int) -> list[dict]:
    from xsp_trace.capture.runner import CaptureRequest, capture_levels

    rows = []
    command = [sys.executable, str(Path(__file__).resolve()), "--profiled-model", model_name]
    for tool, levels in (("torch", ["M", "ML", "MLG"]), ("nsys", ["M", "ML"])):
        out = work / f"{model_name}-{tool}"
        manifest = capture_levels(
            CaptureRequest(command=command, out=out, levels=levels, batch_sizes=[1], iterations=iterations, warmup=20, tools=[tool], overwrite=True)
        )
        for entry in manifest["runs"]:
            session = json.loads((out / entry["session"]).read_text())
            lat = session["latencies_ns"]
            u, i = _trim_mean(lat["uninstrumented"]), _trim_mean(lat["instrumented"])
            rows.append(
                {
                    "model": model_name,
                    "tool": tool,
                    "level": entry["level"],
                    "repeat": repeat,
                    "uninstrumented_us": u / 1000,
                    "instrumented_us": i / 1000,
                    "inflation_pct": 100 * (i / u - 1),
                    "program_changed": (session.get("program_change") or {}).get("changed"),
                }
            )
    return rows


def _under_nsys_range_costs() -> dict | None:
    """Range costs measured in a child process recorded by nsys (NVTX ranges then reach a tool)."""
    from xsp_trace.capture.tools import find_tool

    nsys = find_tool("nsys", None, "NSYS")
    if nsys is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        result = Path(tmp) / "costs.json"
        subprocess.run(
            [
                nsys,
                "profile",
                "--trace=nvtx,osrt",
                "--sample=none",
                "--cpuctxsw=none",
                "--export=none",
                "--force-overwrite=true",
                "-o",
                str(Path(tmp) / "bench"),
                sys.executable,
                str(Path(__file__).resolve()),
                "--range-costs-to",
                str(result),
            ],
            capture_output=True,
            timeout=900,
        )
        return json.loads(result.read_text()) if result.exists() else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--models", default="cnn,mlp,transformer")
    parser.add_argument("--repeats", type=int, default=3, help="leveled captures per model and tool")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--profiled-model", help=argparse.SUPPRESS)  # child: the script the runner profiles
    parser.add_argument("--range-costs-to", type=Path, help=argparse.SUPPRESS)  # child under nsys
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    if args.profiled_model:
        import torch

        from xsp_trace.capture import run

        torch.set_num_threads(1)
        model, make_input = build_model(args.profiled_model)
        run(model, make_input, name=args.profiled_model)
        return
    if args.range_costs_to:
        args.range_costs_to.write_text(
            json.dumps({"ranges": range_costs(), "hooks": {m: hook_costs(m, args.iterations, "nvtx") for m in ("mlp", "cnn")}})
        )
        return

    report = {"ranges_no_tool": range_costs(), "under_nsys": _under_nsys_range_costs(), "hooks": {}, "levels": []}
    for model in ("mlp", "cnn"):
        report["hooks"][model] = {tool: hook_costs(model, args.iterations, tool) for tool in ("nvtx", "torch")}
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            for model in args.models.split(","):
                report["levels"] += level_inflation(model, args.iterations, Path(tmp), repeat)
    report["load_average"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    print(markdown(report))


def markdown(report: dict) -> str:
    """The tables of BENCHMARKS.md "Capture overhead"."""
    out = ["| range (open + close), µs | no tool | recorded (nsys / user-scope torch.profiler) |", "| --- | --- | --- |"]
    ranges, nsys = report["ranges_no_tool"], (report["under_nsys"] or {}).get("ranges", {})
    out.append(f"| NVTX push/pop, domain xsp | {ranges['nvtx']:.2f} | {nsys.get('nvtx', float('nan')):.2f} (nsys) |")
    out.append(
        f"| record_function (user scope) | {ranges['record_function_no_profiler']:.2f} | "
        f"{ranges['record_function_user_scope_profiler']:.2f} (profiler) |"
    )
    out += [
        "",
        "| model | layers | hooks | plain forward µs | empty hooks µs/layer call (peer) | xsp hooks µs/layer call | xsp hooks inflation |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    rows = [(m, "NVTX, no tool", v["nvtx"]) for m, v in report["hooks"].items()]
    rows += [(m, "NVTX under nsys", v) for m, v in ((report["under_nsys"] or {}).get("hooks") or {}).items()]
    rows += [(m, "record_function, user-scope profiler", v["torch"]) for m, v in report["hooks"].items()]
    for model, what, v in rows:
        out.append(
            f"| {model} | {v['layers']} | {what} | {v['plain_median_us']:.0f} | {v['empty_hooks_per_layer_call_us']:.2f} | "
            f"{v['xsp_hooks_per_layer_call_us']:.2f} | {v['xsp_hooks_inflation_pct']:+.0f} % |"
        )
    out += [
        "",
        "| model | tool | level | un-instrumented µs | instrumented µs | inflation, median of repeats (min .. max) | program changed |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    groups: dict = {}
    for row in report["levels"]:
        groups.setdefault((row["model"], row["tool"], row["level"]), []).append(row)
    for (model, tool, level), rs in groups.items():
        infl = sorted(r["inflation_pct"] for r in rs)
        out.append(
            f"| {model} | {tool} | {level} | {statistics.median(r['uninstrumented_us'] for r in rs):.0f} | "
            f"{statistics.median(r['instrumented_us'] for r in rs):.0f} | {statistics.median(infl):+.1f} % ({infl[0]:+.1f} .. {infl[-1]:+.1f}) | "
            f"{rs[0]['program_changed']} |"
        )
    out.append(f"\nload average during the run: {', '.join(f'{x:.2f}' for x in report['load_average'])}")
    return "\n".join(out)


if __name__ == "__main__":
    main()
