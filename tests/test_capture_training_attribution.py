"""A training step captured on the CPU (torch tool, MLG): backward work charged to the forward
layer that created it, every op to its step and phase.

The model is the capture example capture/examples/transformer_2block.py run with --train (forward,
cross-entropy, loss.backward(), SGD step inside each model range), captured by `xsp-trace capture`
and converted. On the CPU the "GPU level" of MLG is torch.profiler's CPU ops.

References, read from the raw trace.json with torch's own fields and never from our tables:
- the forward op of a backward op: the latest op of the forward thread (`Fwd thread id` 0) with the
  backward op's `Sequence number`, starting no later; its layer: the innermost xsp.layer range on
  that thread enclosing it;
- the step: the xsp.model range enclosing the op; the phase: backward for an autograd node
  (`Fwd thread id` > 0) and inside torch's "autograd::engine::evaluate_function: " events (which
  also run AccumulateGrad, a node without a sequence number), optimizer inside an Optimizer.*
  range, else forward;
- and what the model says: EmbeddingBackward0 belongs to `embed`, NativeLayerNormBackward0 to the
  LayerNorms, GeluBackward0 to the GELUs, AddmmBackward0 to the Linear layers (and attention's
  in/out projections), the loss's and the residual adds' backward to no layer.
"""

from __future__ import annotations

import bisect
import json
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xsp_trace.analyze.session import AnalysisOptions, open_session
from xsp_trace.analyze.sql_library import include
from xsp_trace.cli import app

pytestmark = pytest.mark.slow  # torch captures

pytest.importorskip("torch")

CHECKOUT = Path(__file__).resolve().parent.parent
EXAMPLE = CHECKOUT / "capture" / "examples" / "transformer_2block.py"
STEPS = 3
ENGINE = "autograd::engine::evaluate_function: "


@pytest.fixture(scope="module")
def captured(tmp_path_factory):
    work = tmp_path_factory.mktemp("train")
    run_dir = work / "run"
    env = {"PYTHONPATH": os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]), "OMP_NUM_THREADS": "1"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        result = CliRunner().invoke(
            app,
            [
                "capture",
                "-q",
                "--tool",
                "torch",
                "--levels",
                "MLG",
                "--iterations",
                str(STEPS),
                "--warmup",
                "1",
                "-o",
                str(run_dir),
                "--",
                sys.executable,
                str(EXAMPLE),
                "--train",
            ],
        )
        assert result.exit_code == 0, result.output
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    result = CliRunner().invoke(app, ["convert", "-q", str(run_dir)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    (entry,) = manifest["runs"]
    session = json.loads((run_dir / entry["session"]).read_text())
    events = [
        e
        for e in json.loads((run_dir / entry["trace"]).read_text())["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")
    ]
    con = open_session(run_dir / "xsp.duckdb", AnalysisOptions())
    return session, events, con


def _key(event) -> tuple[str, int]:
    return event["name"], round(event["ts"] * 1000)


def _innermost(ranges, event):
    """The innermost range (list of events on the event's thread) enclosing the event's start."""
    best = None
    for r in ranges:
        if r["tid"] == event["tid"] and r["ts"] <= event["ts"] and event["ts"] + event["dur"] <= r["ts"] + r["dur"] + 1e-3:
            if best is None or r["dur"] <= best["dur"]:
                best = r
    return best


def _reference(events):
    """Per op event key: (forward layer name or None for backward ops, step index, phase), from the raw JSON."""
    layers = [e for e in events if e["name"].startswith("xsp.layer:")]
    models = sorted((e for e in events if e["name"].startswith("xsp.model:")), key=lambda e: e["ts"])
    optimizer = [e for e in events if e["name"].startswith("Optimizer.")]
    forward_by_seq = defaultdict(list)  # sequence number -> [(ts, event)] of forward ops
    for e in events:
        args = e.get("args", {})
        if "Sequence number" in args and args.get("Fwd thread id", 0) == 0:
            forward_by_seq[args["Sequence number"]].append((e["ts"], e))
    for ops in forward_by_seq.values():
        ops.sort(key=lambda p: p[0])
    nodes = [e for e in events if e.get("args", {}).get("Fwd thread id", 0) > 0]
    engine = [e for e in nodes if e["name"].startswith(ENGINE)]
    # every node the engine runs, AccumulateGrad (no sequence number, no forward op) included
    all_engine = [e for e in events if e["name"].startswith(ENGINE)]
    reference = {}
    for e in events:
        if e["cat"] != "cpu_op":
            continue
        step = next(i for i, m in enumerate(models) if m["ts"] <= e["ts"] <= m["ts"] + m["dur"])
        node = e if e in nodes else _innermost(engine, e)
        if node is not None:
            # the node's forward op: latest forward op with its sequence number, starting no later
            ops = forward_by_seq[node["args"]["Sequence number"]]
            at = bisect.bisect_right([ts for ts, _ in ops], node["ts"]) - 1
            forward = ops[at][1] if at >= 0 else None
            layer = _innermost(layers, forward) if forward is not None else None
            reference[_key(e)] = (layer["name"] if layer else None, step, "backward", forward)
        elif _innermost(all_engine, e) is not None:
            reference[_key(e)] = (None, step, "backward", None)
        else:
            phase = "optimizer" if _innermost(optimizer, e) is not None else "forward"
            reference[_key(e)] = (None, step, phase, None)
    return reference, nodes


def _ours(con):
    """Per op span key: (layer name, step iteration, phase, layer rule), from the analysis views."""
    include(con, "lib/layers")
    rows = con.execute("""
        SELECT s.name, s.start_ns, l.name, st.iteration, a.phase, sl.layer_rule
        FROM spans AS s
        LEFT JOIN attribution AS a USING (run_id, span_id)
        LEFT JOIN steps AS st ON st.run_id = a.run_id AND st.step_span_id = a.step_span_id
        LEFT JOIN xsp_span_layer AS sl USING (run_id, span_id)
        LEFT JOIN spans AS l ON l.run_id = sl.run_id AND l.span_id = sl.layer_span_id
        WHERE s.kind = 'op'""").fetchall()
    return {(name, start): (layer, step, phase, rule) for name, start, layer, step, phase, rule in rows}


def test_the_capture_is_a_training_step(captured):
    session, events, con = captured
    assert session["step"] == "training" and session["training"] is True
    assert Counter(e["name"] for e in events if e["name"].startswith(("xsp.model:", "Optimizer."))) == {
        "xsp.model:transformer_2block_train": STEPS,
        "Optimizer.zero_grad#SGD.zero_grad": STEPS,
        "Optimizer.step#SGD.step": STEPS,
    }
    assert con.execute("SELECT count(*), count(DISTINCT iteration) FROM steps").fetchone() == (STEPS, STEPS)


def test_backward_ops_charged_to_the_forward_layer_of_their_sequence_number(captured):
    _, events, con = captured
    reference, nodes = _reference(events)
    ours = _ours(con)
    backward = {k: v for k, v in reference.items() if v[2] == "backward"}
    assert len(nodes) > 200 and len(backward) > len(nodes)  # nodes and the aten ops they run
    assert set(backward) <= set(ours)
    wrong = [(k, v[0], ours[k][0]) for k, v in backward.items() if ours[k][0] != v[0]]
    assert wrong == []
    charged = [k for k, v in backward.items() if v[0] is not None]
    assert len(charged) > 0.5 * len(backward)
    # charged through autograd, not by an enclosing range (backward runs after the layer ranges closed)
    assert {ours[k][3] for k in charged} == {"autograd"}


def test_backward_nodes_land_on_the_layers_the_model_says(captured):
    _, events, con = captured
    ours = _ours(con)
    by_node = defaultdict(Counter)  # node name -> Counter of layer types charged
    for e in events:
        if e["name"].startswith(ENGINE):
            layer = ours[_key(e)][0]
            by_node[e["name"][len(ENGINE) :]][layer.rsplit(":", 1)[1] if layer else None] += 1
    assert by_node["EmbeddingBackward0"] == {"Embedding": STEPS}
    assert by_node["NativeLayerNormBackward0"] == {"LayerNorm": 5 * STEPS}
    assert by_node["GeluBackward0"] == {"GELU": 2 * STEPS}
    assert by_node["AddmmBackward0"] == {"Linear": 5 * STEPS, "MultiheadAttention": 4 * STEPS}
    assert by_node["NllLossBackward0"] == {None: STEPS} and by_node["LogSoftmaxBackward0"] == {None: STEPS}
    assert by_node["AddBackward0"] == {None: 4 * STEPS}  # the residual adds of Block.forward


def test_every_op_in_its_step_and_phase(captured):
    _, events, con = captured
    reference, _ = _reference(events)
    ours = _ours(con)
    assert set(reference) == set(ours)
    wrong = [(k, v[1:3], ours[k][1:3]) for k, v in reference.items() if ours[k][1:3] != v[1:3]]
    assert wrong == []
    phases = Counter(v[2] for v in reference.values())
    assert phases["backward"] > 0 and phases["forward"] > 0 and phases["optimizer"] > 0
