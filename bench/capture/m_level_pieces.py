"""Where the M and ML levels' cost goes: each piece alone, in the capture's own pairing, under nsys.

One child process per (tool setting, model) runs the capture's interleaving
(xsp_trace.capture.session._interleaved: plain and instrumented inferences alternating, order
flipped every pair) for these instrumented sides, in rotation (a block of pairs of each, round
after round, so the machine's noise reaches them alike):

  * A/A: nothing (the pairing's own bias);
  * M: the model range as the capture opens it (Range.push/pop: NVTX push/pop in the xsp domain);
  * wrappers: a pass-through Python wrapper on every layer's forward, no range (the Python part
    of the layer level);
  * ML: the layer ranges as the capture installs them (one NVTX push/pop in the wrapper), no
    model range;
  * and, in a tight loop after the pairs: one NVTX push/pop warm (per pair of calls, minus the
    empty loop), and one perf_counter_ns read.

Figures per instrumented side: the order-balanced median paired difference (mean of the plain-first
and instrumented-first medians; see bench/capture/m_level.py) with its seeded bootstrap interval,
per inference and, for the layer sides, per layer call. Tool settings: no tool; nsys with the
--trace set the capture uses for M and ML (xsp_trace/capture/tools.py NSYS_TRACE); nsys with
--trace=nvtx,osrt (OS runtime calls traced as well).

    OMP_NUM_THREADS=1 python -m bench.capture.m_level_pieces --pairs 600 --models tiny_cnn,mlp
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

from bench.capture.m_level import balanced_interval, balanced_median, build_model
from bench.peers.children import module_command

ROUNDS = 6  # blocks of pairs per instrumented side, in rotation


class _Side:
    """What _interleaved needs of an annotation: attach/remove and a model range (or None)."""

    def __init__(self, model_range=None, attach=None, remove=None, layer_calls: int = 0):
        self.model_range = model_range
        self.attach = attach or (lambda: self)
        self.remove = remove or (lambda: None)
        self.layer_calls = layer_calls


def _sides(model, call) -> dict[str, _Side]:
    from xsp_trace.capture.hooks import ModelAnnotation, called_modules, install_forward, restore_forward, select_layers

    called = called_modules(model, call)
    modules = [m for _, m in select_layers(model, None, called)]
    m_level = ModelAnnotation(model, "pieces", layers=False, nvtx=True, torch=False, model_hook=False, called=called)
    ml_level = ModelAnnotation(model, "pieces", layers=True, nvtx=True, torch=False, model_hook=False, called=called)
    installed: list = []

    def attach_passthrough():
        for module in modules:
            forward = module.forward

            def passed(*args, _forward=forward, **kwargs):
                return _forward(*args, **kwargs)

            installed.append((module, install_forward(module, passed)))

    def remove_passthrough():
        for module, previous in reversed(installed):
            restore_forward(module, previous)
        installed.clear()

    calls = len(modules)  # every selected layer of these models runs once per inference
    return {
        "A/A": _Side(),
        "M: NVTX model range": _Side(m_level.model_range),
        "wrappers: pass-through, no range": _Side(None, attach_passthrough, remove_passthrough, calls),
        "ML: NVTX layer ranges, no model range": _Side(None, ml_level.attach, ml_level.remove, calls),
    }


def _warm_costs(n: int = 50_000) -> dict:
    """ns per NVTX push/pop pair and per clock read in a tight loop, minus the empty loop."""
    from xsp_trace.capture.ranges import RangeFactory

    nvtx_range = RangeFactory(nvtx=True, torch=False)("xsp.model:warm")
    push, pop, clock = nvtx_range.push, nvtx_range.pop, time.perf_counter_ns

    def empty():
        for _ in range(n):
            pass

    def ranges():
        for _ in range(n):
            push()
            pop()

    def clocks():
        for _ in range(n):
            clock()

    def best(loop) -> float:
        times = []
        for _ in range(5):
            start = clock()
            loop()
            times.append(clock() - start)
        return statistics.median(times) / n

    base = best(empty)
    return {"nvtx_push_pop_ns": best(ranges) - base, "clock_read_ns": best(clocks) - base}


def child(model_name: str, pairs: int) -> dict:
    import torch

    from xsp_trace.capture.session import _interleaved

    torch.set_num_threads(1)
    model, make_input = build_model(model_name)
    x = make_input(1)
    result: dict = {}
    with torch.inference_mode():
        call = lambda: model(x)  # noqa: E731
        for _ in range(50):
            call()
        sides = _sides(model, call)
        diffs: dict[str, list[float]] = {name: [] for name in sides}
        block = max(2, pairs // ROUNDS // 2 * 2)  # even: each block holds both orders alike
        for _ in range(ROUNDS):
            for name, side in sides.items():
                plain, _, instrumented = _interleaved(call, block, None, side, {})
                diffs[name] += [(i - p) / 1000 for p, i in zip(plain, instrumented, strict=True)]
        for name, side in sides.items():
            d = diffs[name]
            low, high = balanced_interval(d)
            result[name] = {"pairs": len(d), "median_us": balanced_median(d), "low_us": low, "high_us": high, "layer_calls": side.layer_calls}
        result["warm"] = _warm_costs()
        result["load_1min"] = os.getloadavg()[0]
    return result


def settings() -> list[tuple[str, list[str]]]:
    """(label, command prefix) of each tool setting."""
    from xsp_trace.capture.tools import NSYS_COMMON, NSYS_TRACE, find_tool

    out: list[tuple[str, list[str]]] = [("no tool", [])]
    nsys = find_tool("nsys", None, "NSYS")
    if nsys is not None:
        for trace in dict.fromkeys([NSYS_TRACE["M"], "nvtx,osrt"]):
            out.append((f"nsys --trace={trace}", [nsys, "profile", f"--trace={trace}", *NSYS_COMMON]))
    return out


def run_child(prefix: list[str], model: str, pairs: int, tmp: Path) -> dict:
    result = tmp / "pieces.json"
    command = module_command("bench.capture.m_level_pieces", "--child", model, "--pairs", pairs, "--to", result)
    if prefix:
        command = [*prefix, "-o", str(tmp / "pieces"), *command]
    for _ in range(3):  # nsys on a shared machine now and then fails to start (sem_open)
        done = subprocess.run(command, capture_output=True, text=True, timeout=1800)
        if result.exists():
            break
    if not result.exists():
        raise SystemExit(f"{' '.join(prefix[:3]) or 'no tool'}: the child wrote nothing (exit {done.returncode}): {done.stderr[-2000:]}")
    data = json.loads(result.read_text())
    result.unlink()
    return data


def markdown(rows: list[dict]) -> str:
    out = [
        "| tool | model | instrumented side | pairs | per inference µs, order-balanced median [95 % interval] | per layer call µs [95 % interval] |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        per_call = "-"
        if r["layer_calls"]:
            n = r["layer_calls"]
            per_call = f"{r['median_us'] / n:.2f} [{r['low_us'] / n:.2f} .. {r['high_us'] / n:.2f}]"
        out.append(
            f"| {r['tool']} | {r['model']} | {r['side']} | {r['pairs']} | {r['median_us']:+.1f} [{r['low_us']:+.1f} .. {r['high_us']:+.1f}] | {per_call} |"
        )
    return "\n".join(out)


def measure(models: list[str], pairs: int) -> tuple[list[dict], list[dict]]:
    """(rows of the pieces table, warm costs) of every model under every tool setting."""
    rows, warm = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for label, prefix in settings():
                data = run_child(prefix, model, pairs, Path(tmp))
                for side, r in data.items():
                    if side not in ("warm", "load_1min"):
                        rows.append({"tool": label, "model": model, "side": side, **r})
                warm.append({"tool": label, "model": model, **data["warm"], "load_1min": data["load_1min"]})
                print(markdown(rows[-4:]).splitlines()[-4:], warm[-1], file=sys.stderr, flush=True)
    return rows, warm


def report(rows: list[dict], warm: list[dict]) -> str:
    lines = [
        markdown(rows),
        "",
        "| tool | model | warm NVTX push/pop ns | clock read ns | load (1 min) at the end |",
        "| --- | --- | --- | --- | --- |",
    ]
    for w in warm:
        lines.append(f"| {w['tool']} | {w['model']} | {w['nvtx_push_pop_ns']:.0f} | {w['clock_read_ns']:.0f} | {w['load_1min']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=600)
    parser.add_argument("--models", default="tiny_cnn,mlp")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--to", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.child:
        args.to.write_text(json.dumps(child(args.child, args.pairs)))
        return
    rows, warm = measure(args.models.split(","), args.pairs)
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "warm": warm}, indent=1))
    print(report(rows, warm))


if __name__ == "__main__":
    main()
