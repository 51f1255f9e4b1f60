"""The GPU check: a small CUDA model captured at M, ML and MLG with the torch tool, converted, checked.

One prepared script (a few minutes on one GPU). It runs `xsp-trace capture --tool torch --levels
M,ML,MLG` on a small all-layer CNN (every op of its forward inside a leaf module), converts the run
directory and checks, printing one table:

  1. the capture completed (three runs, status ok);
  2. kernels: the MLG run holds as many kernels as its trace.json has `kernel` events (the raw
     JSON is the reference);
  3. kernels charged to layers: every kernel of the MLG run has a layer span among its ancestors
     (through its launching CUDA API call), and a model span;
  4. only the instrumented inferences were recorded: the kernel count is a multiple of the
     iterations (the profiler, paused for the un-instrumented inferences, paused CUDA activity too);
  5. the M level costs <= 5 µs per inference: median paired difference (instrumented -
     un-instrumented, same process, interleaved) with a seeded bootstrap 95 % interval;
  6. the ML level costs <= 3 µs per layer call (layer sync off, so the figure is the ranges').

Exits 1 when a check fails, 0 otherwise; an overhead whose interval is over ten limits wide is
"noisy" (the machine, not the capture: run again on a quiet one). Without a CUDA device it runs the same capture on the
CPU, skips checks 2-4 (they need kernels) and says so.

    python -m bench.capture.gpu_check [--iterations 200] [--keep DIR]
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
# The children (this file run as a script under the capture or a tool) import this checkout's xsp_trace.
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(CHECKOUT), os.environ.get("PYTHONPATH")]))

M_LIMIT_US = 5.0  # per inference
ML_LIMIT_US = 3.0  # per layer call


def build_model(device: str):
    """A small CNN whose forward is all layers (nothing runs between them) and its input factory."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    c = 32
    layers = [nn.Conv2d(3, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
    for _ in range(3):
        layers += [nn.Conv2d(c, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU()]
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c, 10)]
    model = nn.Sequential(*layers).eval().to(device)
    return model, lambda b: torch.randn(b, 3, 32, 32, device=device)


def median_interval(values: list[float], resamples: int = 2000, seed: int = 0) -> tuple[float, float]:
    """Seeded percentile-bootstrap 95 % interval of the median."""
    rng = random.Random(seed)
    n = len(values)
    medians = sorted(statistics.median(values[rng.randrange(n)] for _ in range(n)) for _ in range(resamples))
    return medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def paired_overhead_us(session: dict) -> tuple[float, float, float, int]:
    """(median, low, high) of the paired differences in µs, and the layer calls of one inference."""
    lat = session["latencies_ns"]
    diffs = [(i - p) / 1000 for p, i in zip(lat["uninstrumented"], lat["instrumented"], strict=True)]
    low, high = median_interval(diffs)
    calls = sum(layer.get("calls_per_inference") or 0 for layer in session.get("layers") or [])
    return statistics.median(diffs), low, high, calls


class Table:
    def __init__(self):
        self.rows: list[tuple[str, str, str, str]] = []

    def add(self, check: str, status: str, measured: str, reference: str) -> None:
        self.rows.append((check, status, measured, reference))
        print(f"  {status:5} {check}: {measured}", file=sys.stderr, flush=True)

    def failed(self) -> bool:
        return any(status == "FAIL" for _, status, _, _ in self.rows)

    def markdown(self) -> str:
        out = ["| check | result | measured | against |", "| --- | --- | --- | --- |"]
        out += [f"| {c} | {s} | {m} | {r} |" for c, s, m, r in self.rows]
        return "\n".join(out)


def _status(ok: bool) -> str:
    return "ok" if ok else "FAIL"


def _overhead_status(median: float, low: float, high: float, limit: float) -> str:
    """ok / FAIL by the median; "noisy" (neither) when the interval is over 10 limits wide."""
    if high - low > 10 * limit:
        return "noisy"
    return _status(median <= limit)


def check_kernels(table: Table, run_dir: Path, entry: dict, db, run_id: int, iterations: int) -> None:
    events = json.loads((run_dir / entry["trace"]).read_text())["traceEvents"]
    raw = sum(1 for e in events if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")
    kernels = db.execute("SELECT count(*) FROM spans WHERE run_id = ? AND kind = 'kernel'", [run_id]).fetchone()[0]
    table.add("MLG kernels converted", _status(kernels == raw and raw > 0), f"{kernels} kernels", f"{raw} `kernel` events in trace.json")
    charged = db.execute(
        """SELECT count(*) FILTER (WHERE layer), count(*) FILTER (WHERE model), count(*)
           FROM (SELECT k.span_id, bool_or(a.kind = 'layer') AS layer, bool_or(a.kind = 'model') AS model
                 FROM spans k LEFT JOIN span_ancestors sa ON sa.run_id = k.run_id AND sa.span_id = k.span_id
                 LEFT JOIN spans a ON a.run_id = sa.run_id AND a.span_id = sa.ancestor_id
                 WHERE k.run_id = ? AND k.kind = 'kernel' GROUP BY k.span_id)""",
        [run_id],
    ).fetchone()
    under_layer, under_model, total = charged
    table.add(
        "kernels charged to layers",
        _status(total > 0 and under_layer == total and under_model == total),
        f"{under_layer} of {total} under a layer span, {under_model} under a model span",
        "all (every op of the model's forward is in a layer)",
    )
    table.add(
        "kernels only from instrumented inferences",
        _status(total > 0 and total % iterations == 0),
        f"{total} kernels = {total / iterations:g} per inference",
        f"a multiple of the {iterations} instrumented inferences (the paused profiler records none of the others)",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=200, help="interleaved pairs per run")
    parser.add_argument("--keep", type=Path, help="write the run directory here instead of a temporary folder")
    parser.add_argument("--profiled", choices=["cuda", "cpu"], help=argparse.SUPPRESS)  # child: the script the runner profiles
    args = parser.parse_args()
    if args.profiled:
        import torch

        from xsp_trace.capture import run

        torch.set_num_threads(1)
        model, make_input = build_model(args.profiled)
        run(model, make_input, name="gpu_check_cnn")
        return 0

    import duckdb
    import torch

    from xsp_trace.capture.runner import CaptureRequest, capture_levels

    cuda = torch.cuda.is_available()
    device = "cuda" if cuda else "cpu"
    print(
        f"device: {torch.cuda.get_device_name(0) if cuda else 'no CUDA device: the GPU checks (kernels) are skipped, the rest runs on the CPU'}",
        flush=True,
    )
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    table = Table()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = args.keep or Path(tmp) / "gpu-check"
        command = [sys.executable, str(Path(__file__).resolve()), "--profiled", device]
        request = CaptureRequest(
            command=command,
            out=run_dir,
            levels=["M", "ML", "MLG"],
            iterations=args.iterations,
            warmup=20,
            tools=["torch"],
            layer_sync="none",
            overwrite=True,
        )
        manifest = capture_levels(request)
        runs = {entry["level"]: entry for entry in manifest["runs"]}
        table.add(
            "capture",
            _status(manifest["status"] == "complete" and all(e["status"] == "ok" for e in runs.values())),
            ", ".join(f"{lv} {e['status']} ({e['wall_s']:.0f} s)" for lv, e in runs.items()),
            "3 runs ok",
        )
        from typer.testing import CliRunner

        from xsp_trace.cli import app

        result = CliRunner().invoke(app, ["convert", "-q", str(run_dir)])
        table.add("convert", _status(result.exit_code == 0), f"exit {result.exit_code}", "exit 0")
        if result.exit_code != 0:
            print(result.output, file=sys.stderr)
        with duckdb.connect(str(run_dir / "xsp.duckdb"), read_only=True) as db:
            run_ids = dict(db.execute("SELECT level, run_id FROM runs").fetchall())
            if cuda:
                check_kernels(table, run_dir, runs["MLG"], db, run_ids["MLG"], args.iterations)
            else:
                for check in ("MLG kernels converted", "kernels charged to layers", "kernels only from instrumented inferences"):
                    table.add(check, "skip", "no CUDA device on this machine", "needs a GPU")
        for level, limit in (("M", M_LIMIT_US), ("ML", ML_LIMIT_US)):
            session = json.loads((run_dir / runs[level]["session"]).read_text())
            median, low, high, calls = paired_overhead_us(session)
            plain = statistics.median(session["latencies_ns"]["uninstrumented"]) / 1000
            if level == "M":
                table.add(
                    "M overhead per inference",
                    _overhead_status(median, low, high, limit),
                    f"{median:+.1f} µs [{low:+.1f} .. {high:+.1f}] of {plain:.0f} µs",
                    f"<= {limit:g} µs",
                )
            else:
                table.add(
                    "ML overhead per layer call",
                    _overhead_status(median / calls, low / calls, high / calls, limit),
                    f"{median / calls:+.2f} µs [{low / calls:+.2f} .. {high / calls:+.2f}] ({calls} layer calls, {plain:.0f} µs)",
                    f"<= {limit:g} µs",
                )
    print(
        f"\n{table.markdown()}\n\n{'GPU' if cuda else 'CPU (GPU checks skipped)'}, {args.iterations} pairs per run, {time.perf_counter() - started:.0f} s"
    )
    return 1 if table.failed() else 0


if __name__ == "__main__":
    sys.exit(main())
