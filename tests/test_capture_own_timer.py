"""The torch tool's M and ML runs start no profiler: the capture times its ranges itself.

References: torch's own profiler state read from inside the model's forward during the timed
inferences (torch._C._autograd._profiler_enabled), the session's plain-timer latencies of the
same inferences (each model range lies inside its inference's timed interval), the module tree
written out in test_capture_hooks, and the Kineto converter reading the written trace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent / "capture_scripts"))
from tiny_model import build, make_input  # noqa: E402

from test_capture_hooks import FUSED_CALL_ORDER, FUSED_TREE_ORDER, _range  # noqa: E402
from xsp_trace.capture.session import SessionConfig, measure  # noqa: E402

pytestmark = pytest.mark.slow  # torch captures

ITERATIONS = 6


class _ProfilerWitness(torch.nn.Module):
    """Wraps a model and notes, at every forward, whether a torch profiler session is on."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.profiler_on: list[bool] = []

    def forward(self, x):
        self.profiler_on.append(bool(torch._C._autograd._profiler_enabled()))
        return self.model(x)


def _measure(tmp_path: Path, level: str, model=None) -> dict:
    config = SessionConfig(level=level, tool="torch", batch_size=2, iterations=ITERATIONS, warmup=1, out=tmp_path / level)
    return measure(model if model is not None else build(), make_input, config, name="tiny")


def _trace_events(tmp_path: Path, level: str, session: dict) -> list[dict]:
    events = json.loads((tmp_path / level / session["trace"]).read_text())["traceEvents"]
    return sorted((e for e in events if e.get("ph") == "X"), key=lambda e: (e["ts"], -e["dur"]))


@pytest.mark.parametrize("level", ["M", "ML"])
def test_no_profiler_is_on_while_the_ranges_are_timed(tmp_path, level):
    witness = _ProfilerWitness(build())
    session = _measure(tmp_path, level, witness)
    assert session["profiler_scope"] == "none"
    # warm-up, call census, probe (and, at ML, two op counts), then 2 x ITERATIONS timed inferences
    assert len(witness.profiler_on) >= 2 * ITERATIONS and not any(witness.profiler_on)


def test_model_ranges_lie_inside_their_timed_inferences(tmp_path):
    session = _measure(tmp_path, "M")
    models = [e for e in _trace_events(tmp_path, "M", session) if e["name"] == "xsp.model:tiny"]
    assert len(models) == ITERATIONS
    latencies_us = [ns / 1000 for ns in session["latencies_ns"]["instrumented"]]
    for model_range, latency in zip(models, latencies_us, strict=True):
        assert 0 < model_range["dur"] <= latency + 0.001  # the plain timer encloses the range
    starts = [e["ts"] for e in models]
    assert starts == sorted(starts) and all(b >= a + d["dur"] for a, b, d in zip(starts, starts[1:], models, strict=False))


def test_layer_ranges_nest_in_call_order_and_convert(tmp_path):
    session = _measure(tmp_path, "ML")
    events = _trace_events(tmp_path, "ML", session)
    assert [(layer["name"], layer["type"]) for layer in session["layers"]] == FUSED_TREE_ORDER
    models = [e for e in events if e["name"] == "xsp.model:tiny"]
    assert len(models) == ITERATIONS
    for m in models:
        inside = [e["name"] for e in events if e["name"].startswith("xsp.layer:") and m["ts"] <= e["ts"] and e["ts"] + e["dur"] <= m["ts"] + m["dur"]]
        assert inside == [_range(name, FUSED_TREE_ORDER) for name in FUSED_CALL_ORDER]
    assert sum(e["name"].startswith("xsp.layer:") for e in events) == ITERATIONS * len(FUSED_CALL_ORDER)

    from typer.testing import CliRunner

    from xsp_trace.cli import app

    out = tmp_path / "ml.duckdb"
    result = CliRunner().invoke(app, ["convert", "-q", str(tmp_path / "ML" / session["trace"]), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with duckdb.connect(str(out), read_only=True) as db:
        kinds = dict(db.execute("SELECT kind, count(*) FROM spans GROUP BY 1").fetchall())
        durations = [d for (d,) in db.execute("SELECT end_ns - start_ns FROM spans WHERE kind = 'model' ORDER BY start_ns").fetchall()]
    assert kinds == {"model": ITERATIONS, "layer": ITERATIONS * len(FUSED_CALL_ORDER)}
    assert durations == [round(m["dur"] * 1000) for m in models]
