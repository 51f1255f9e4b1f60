"""Model/layer annotation of an nn.Module (xsp_trace.capture.hooks), checked in torch's own traces.

The reference is what torch.profiler itself records (its Chrome trace export) and torch's own
dispatcher (which ops a forward runs); expected layer names come from the module tree, written
out by hand below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent / "capture_scripts"))
from tiny_model import build, make_input  # noqa: E402

from xsp_trace.capture import annotate  # noqa: E402
from xsp_trace.capture.hooks import (  # noqa: E402
    called_modules,
    compare_programs,
    count_ops,
    describe_layers,
    probe_layers,
    select_layers,
)
from xsp_trace.capture.session import _UserScopeProfiler  # noqa: E402

pytestmark = pytest.mark.slow  # torch captures

# Module tree order of the leaves (by calls) of TinyModel -> the layer index, when the encoder
# layer calls its submodules (autograd on: torch's fused fast path is off).
TREE_ORDER = [
    ("conv.0", "Conv2d"),
    ("conv.1", "ReLU"),
    ("conv.2", "Conv2d"),
    ("conv.3", "ReLU"),
    ("proj", "Linear"),
    ("encoder.self_attn", "MultiheadAttention"),
    ("encoder.linear1", "Linear"),
    ("encoder.dropout", "Dropout"),
    ("encoder.linear2", "Linear"),
    ("encoder.norm1", "LayerNorm"),
    ("encoder.norm2", "LayerNorm"),
    ("encoder.dropout1", "Dropout"),
    ("encoder.dropout2", "Dropout"),
    ("head", "Linear"),
]
# The order one forward with autograd on calls them: TransformerEncoderLayer runs its attention
# block (self_attn, dropout1, norm1) before its feed-forward block.
CALL_ORDER = [
    "conv.0",
    "conv.1",
    "conv.2",
    "conv.3",
    "proj",
    "encoder.self_attn",
    "encoder.dropout1",
    "encoder.norm1",
    "encoder.linear1",
    "encoder.dropout",
    "encoder.linear2",
    "encoder.dropout2",
    "encoder.norm2",
    "head",
]


# Under inference_mode the encoder layer runs torch's fused fast path
# (_transformer_encoder_layer_fwd) and calls none of its submodules: it is one leaf by calls.
FUSED_TREE_ORDER = [(n, t) for n, t in TREE_ORDER if not n.startswith("encoder.")]
FUSED_TREE_ORDER.insert(5, ("encoder", "TransformerEncoderLayer"))
FUSED_CALL_ORDER = ["conv.0", "conv.1", "conv.2", "conv.3", "proj", "encoder", "head"]


def _range(name: str, order=TREE_ORDER) -> str:
    index = [n for n, _ in order].index(name)
    return f"xsp.layer:{index}:{name}:{order[index][1]}"


def _profiled_events(model, call, tmp_path: Path, iterations: int, mode=torch.inference_mode) -> list[dict]:
    profiler = _UserScopeProfiler()
    with mode(), profiler:
        for _ in range(iterations):
            call()
    path = tmp_path / "trace.json"
    profiler.export(path)
    events = json.loads(path.read_text())["traceEvents"]
    return sorted((e for e in events if e.get("ph") == "X" and e["name"].startswith("xsp.")), key=lambda e: (e["ts"], -e["dur"]))


@pytest.mark.parametrize(
    "mode, tree_order, call_order",
    [(torch.enable_grad, TREE_ORDER, CALL_ORDER), (torch.inference_mode, FUSED_TREE_ORDER, FUSED_CALL_ORDER)],
    ids=["autograd", "inference-fused-encoder"],
)
def test_layer_ranges_follow_the_module_tree_and_nest_in_the_model_range(tmp_path, mode, tree_order, call_order):
    model, x = build(), make_input(2)
    with mode():
        called = called_modules(model, lambda: model(x))
    annotation = annotate(model, "tiny", nvtx=False, torch=True, called=called)
    events = _profiled_events(model, lambda: model(x), tmp_path, iterations=3, mode=mode)
    annotation.remove()

    assert [(layer.name, layer.type) for layer in annotation.layers] == tree_order
    models = [e for e in events if e["name"] == "xsp.model:tiny"]
    assert len(models) == 3
    for m in models:
        inside = [e["name"] for e in events if e["name"].startswith("xsp.layer:") and m["ts"] <= e["ts"] and e["ts"] + e["dur"] <= m["ts"] + m["dur"]]
        assert inside == [_range(name, tree_order) for name in call_order]
    assert sum(e["name"].startswith("xsp.layer:") for e in events) == 3 * len(call_order)  # none outside a model range
    assert profiler_scope_is_user(events)


def profiler_scope_is_user(events) -> bool:
    return all(e["name"].startswith("xsp.") for e in events)


def test_user_scope_profile_records_no_aten_ops(tmp_path):
    model, x = build(), make_input(1)
    annotation = annotate(model, "tiny", nvtx=False, torch=True)
    profiler = _UserScopeProfiler()
    with torch.inference_mode(), profiler:
        model(x)
    annotation.remove()
    profiler.export(tmp_path / "t.json")
    names = {e["name"] for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("ph") == "X"}
    assert profiler.scope == "user"
    assert not any(n.startswith("aten::") for n in names)
    assert "xsp.model:tiny" in names and _range("conv.0") in names


def test_under_a_plain_torch_profiler_ranges_appear_with_the_aten_ops(tmp_path):
    model, x = build(), make_input(1)
    annotation = annotate(model, "tiny")  # defaults: NVTX + record_function while a profiler records
    with torch.inference_mode(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        model(x)
    annotation.remove()
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("ph") == "X"]
    conv = next(e for e in events if e["name"] == _range("conv.0"))
    ops = [e["name"] for e in events if e["name"].startswith("aten::") and conv["ts"] <= e["ts"] <= conv["ts"] + conv["dur"]]
    assert "aten::conv2d" in ops


def _hook_state(model) -> list:
    return [
        (
            name,
            dict(m._forward_hooks),
            dict(m._forward_pre_hooks),
            dict(m._forward_hooks_always_called),
            dict(m._forward_hooks_with_kwargs),
            dict(m._forward_pre_hooks_with_kwargs),
        )
        for name, m in model.named_modules()
    ]


def test_remove_restores_the_model_exactly():
    model, x = build(), make_input(2)
    before_state = _hook_state(model)
    before_attributes = [sorted(vars(m)) for m in model.modules()]
    before_params = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.inference_mode():
        plain_out = model(x)
        plain_ops = count_ops(lambda: model(x))
        with annotate(model, "tiny", nvtx=True, torch="auto") as annotation:
            assert annotation.attached
            hooked_out = model(x)
            assert count_ops(lambda: model(x)) == plain_ops  # the layer wrappers leave the fused fast path on
            assert _hook_state(model) == before_state  # no module hooks at all
        restored_ops = count_ops(lambda: model(x))
        restored_out = model(x)
    assert _hook_state(model) == before_state and [sorted(vars(m)) for m in model.modules()] == before_attributes
    assert all(torch.equal(before_params[k], v) for k, v in model.state_dict().items())
    assert restored_ops == plain_ops and plain_ops["_transformer_encoder_layer_fwd"] == 1  # fast path is back
    assert torch.allclose(hooked_out, plain_out, atol=1e-5) and torch.equal(restored_out, plain_out)


class _ChecksForWrappers(torch.nn.Module):
    """A module whose program depends on whether its child's forward was replaced."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.inner(x)
        return y.relu() if "forward" in vars(self.inner) else y


def test_layer_wrappers_keep_the_transformer_fast_path_and_a_changed_program_is_detected():
    model, x = build(), make_input(2)
    with torch.inference_mode():
        fused = count_ops(lambda: model(x))["_transformer_encoder_layer_fwd"]
        handle = model.encoder.norm1.register_forward_pre_hook(lambda m, a: None)
        with_a_hook = count_ops(lambda: model(x))["_transformer_encoder_layer_fwd"]  # what module hooks did
        handle.remove()
        change = compare_programs(model, lambda: model(x))  # layers: the leaves of the module tree
    assert fused == 1 and with_a_hook == 0
    assert not change.changed and change.note is None
    probe, x4 = _ChecksForWrappers(), torch.randn(2, 4)
    with torch.inference_mode():
        change = compare_programs(probe, lambda: probe(x4))
    assert change.changed and change.ops_with_hooks_only == {"relu": 1}
    assert "layer instrumentation changes the ops the model runs" in change.note


def test_layer_metadata_shapes_and_parameter_bytes():
    model, x = build(), make_input(2)
    with torch.enable_grad():  # the encoder layer calls its submodules
        called = called_modules(model, lambda: model(x))
        infos = describe_layers(model, None, called)
        probe_layers(model, lambda: model(x), infos, None, called)
    by_name = {i.name: i for i in infos}
    conv0 = by_name["conv.0"]
    assert conv0.parameter_bytes == (8 * 3 * 3 * 3 + 8) * 4  # float32 weight + bias
    assert conv0.input_shapes == [[2, 3, 16, 16]] and conv0.output_shapes == [2, 8, 16, 16]
    assert by_name["conv.2"].output_shapes == [2, 16, 8, 8]
    assert by_name["head"].parameter_bytes == (32 * 10 + 10) * 4 and by_name["head"].output_shapes == [2, 10]
    attention = by_name["encoder.self_attn"]  # in_proj (3*32x32 + 96) + out_proj (32x32 + 32)
    assert attention.parameter_bytes == (3 * 32 * 32 + 3 * 32 + 32 * 32 + 32) * 4
    assert all(i.calls_per_inference == 1 for i in infos)
    assert [i.index for i in infos] == list(range(len(TREE_ORDER)))


def test_depth_selects_coarser_layers():
    model = build()
    assert [n for n, _ in select_layers(model, depth=1)] == ["conv", "proj", "encoder", "head"]
    assert [n for n, _ in select_layers(model, depth=2)][:4] == ["conv.0", "conv.1", "conv.2", "conv.3"]
    leaf = torch.nn.Linear(2, 2)
    assert [n for n, _ in select_layers(leaf)] == ["<root>"]


def test_an_exception_inside_a_layer_closes_its_ranges(tmp_path):
    model, x = build(), make_input(1)
    wrong_channels = torch.randn(1, 5, 16, 16)  # conv.0 raises inside its own range

    annotation = annotate(model, "tiny", nvtx=False, torch=True)
    profiler = _UserScopeProfiler()
    with torch.inference_mode(), profiler:
        with pytest.raises(RuntimeError, match="channels"):
            model(wrong_channels)
        model(x)
    annotation.remove()
    assert all(not r._open for r in annotation._layer_ranges) and not annotation.model_range._open
    profiler.export(tmp_path / "t.json")
    events = [e for e in json.loads((tmp_path / "t.json").read_text())["traceEvents"] if e.get("ph") == "X"]
    assert sum(e["name"] == "xsp.model:tiny" for e in events) == 2
    assert sum(e["name"].startswith("xsp.layer:0:conv.0:") for e in events) == 2  # the raising call's range too
