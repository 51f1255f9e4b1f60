"""Model and layer annotation of a PyTorch nn.Module: NVTX / record_function ranges from hooks.

- The model range ("xsp.model:<name>") encloses each inference: either explicitly
  (`with annotation.inference(): model(x)`) or from hooks on the root module (model_hook=True).
- Layer ranges ("xsp.layer:<index>:<qualified name>:<type>") enclose each call of a selected
  module, from a forward pre-hook (push) and an always-called forward hook (pop), so an
  exception inside a layer still closes its range.
- Layers are the leaf modules by default; `depth=d` takes the modules d levels below the root
  (plus leaves above that depth) for coarser layers. Given the modules one forward called
  (`called_modules`), a module whose children are never called (nn.MultiheadAttention uses its
  out_proj weights without calling it) counts as a leaf. Indices follow the module tree order
  (named_modules), so they are stable across runs, batch sizes and levels.
- `remove()` takes every hook away again: the model's hook dictionaries are as before.

Per-module hooks are what XSP's layer level needs, but they change what some modules run:
nn.TransformerEncoderLayer leaves its fused fast path when any of its modules carries a hook.
`compare_programs` runs one forward with and one without hooks under a dispatch-level op
counter and reports the ops that differ, so the capture can record the change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

from xsp_trace.naming import layer_range_name, model_range_name

from .ranges import RangeFactory

ROOT_NAME = "<root>"  # qualified name of the root module when the model itself is the only layer


@dataclass
class LayerInfo:
    """What the run manifest says about one layer."""

    index: int
    name: str  # qualified module name in the model (named_modules)
    type: str  # class name of the module
    depth: int  # number of components of the qualified name (1 = direct child of the root)
    range_name: str  # the NVTX / record_function range name of its calls
    parameter_bytes: int  # bytes of the parameters of the module and its submodules
    buffer_bytes: int  # bytes of its buffers (running stats...) and its submodules'
    input_shapes: Any = None  # shapes of the first call's positional inputs (nested lists), from a probe forward
    output_shapes: Any = None  # shapes of the first call's output
    calls_per_inference: int | None = None  # how many times one forward called it (0: never called)

    def to_json(self) -> dict:
        return asdict(self)


def called_modules(model, call: Callable[[], Any]) -> set[int]:
    """ids of the modules that one `call()` (a forward) calls through their __call__."""
    called: set[int] = set()
    handles = [m.register_forward_pre_hook(lambda m, a: called.add(id(m))) for m in model.modules()]
    try:
        call()
    finally:
        for handle in handles:
            handle.remove()
    return called


def _is_leaf(module, called: set[int] | None) -> bool:
    children = list(module.children())
    if not children:
        return True
    if called is None or id(module) not in called:
        return False
    return not any(id(d) in called for child in children for d in child.modules())


def select_layers(model, depth: int | None = None, called: set[int] | None = None) -> list[tuple[str, Any]]:
    """(qualified name, module) of the layers, in module tree order (see the module docstring)."""
    chosen = []
    for qualified_name, module in model.named_modules():
        level = 0 if qualified_name == "" else qualified_name.count(".") + 1
        is_leaf = _is_leaf(module, called)
        if depth is None:
            keep = is_leaf
        else:
            keep = level == depth or (is_leaf and level < depth)
        if keep:
            chosen.append((qualified_name or ROOT_NAME, module))
    # A leaf by calls may sit below another selected module only if that one is a call-tree
    # leaf too; keep the outermost so layer ranges never nest.
    kept: list[tuple[str, Any]] = []
    inside: set[int] = set()
    for name, module in chosen:
        if id(module) in inside:
            continue
        kept.append((name, module))
        inside.update(id(d) for d in module.modules())
    return kept


def _bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def describe_layers(model, depth: int | None = None, called: set[int] | None = None) -> list[LayerInfo]:
    infos = []
    for index, (name, module) in enumerate(select_layers(model, depth, called)):
        type_name = type(module).__name__
        infos.append(
            LayerInfo(
                index=index,
                name=name,
                type=type_name,
                depth=0 if name == ROOT_NAME else name.count(".") + 1,
                range_name=layer_range_name(index, name, type_name),
                parameter_bytes=_bytes(module.parameters()),
                buffer_bytes=_bytes(module.buffers()),
            )
        )
    return infos


def shapes_of(value) -> Any:
    """Shapes of the tensors in a (nested) value; non-tensors become their type name."""
    shape = getattr(value, "shape", None)
    if shape is not None and hasattr(value, "dtype"):
        return list(shape)
    if isinstance(value, (list, tuple)):
        return [shapes_of(v) for v in value]
    if isinstance(value, dict):
        return {str(k): shapes_of(v) for k, v in value.items()}
    if value is None:
        return None
    return type(value).__name__


def probe_layers(model, call: Callable[[], Any], infos: list[LayerInfo], depth: int | None = None, called: set[int] | None = None) -> None:
    """Fill input/output shapes and calls per inference of `infos` from one forward (`call`)."""
    modules = [m for _, m in select_layers(model, depth, called)]
    calls = [0] * len(infos)
    handles = []
    for info, module in zip(infos, modules, strict=True):

        def record(module, args, output, info=info):
            calls[info.index] += 1
            if calls[info.index] == 1:
                info.input_shapes = shapes_of(args)
                info.output_shapes = shapes_of(output)

        handles.append(module.register_forward_hook(record))
    try:
        call()
    finally:
        for handle in handles:
            handle.remove()
    for info in infos:
        info.calls_per_inference = calls[info.index]


def count_ops(call: Callable[[], Any]) -> Counter:
    """aten op calls of one `call()`, counted below autograd (TorchDispatchMode)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    counts: Counter = Counter()

    class _OpCounter(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            counts[str(func.overloadpacket.__name__)] += 1
            return func(*args, **(kwargs or {}))

    with _OpCounter():
        call()
    return counts


@dataclass
class ProgramChange:
    """How attaching layer hooks changed the ops one forward runs (empty when it did not)."""

    changed: bool
    ops_without_hooks_only: dict = field(default_factory=dict)  # op -> calls lost when hooks are attached
    ops_with_hooks_only: dict = field(default_factory=dict)  # op -> calls added when hooks are attached
    note: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


_FAST_PATH_OPS = {
    "_transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer fused fast path",
    "_native_multi_head_attention": "nn.MultiheadAttention fused fast path",
}


def compare_programs(model, call: Callable[[], Any], depth: int | None = None, called: set[int] | None = None) -> ProgramChange:
    """Ops of one forward without hooks vs with (silent) hooks on the layers."""
    plain = count_ops(call)
    handles = []
    for _, module in select_layers(model, depth, called):
        handles.append(module.register_forward_pre_hook(lambda module, args: None))
        handles.append(module.register_forward_hook(lambda module, args, output: None, always_call=True))
    try:
        hooked = count_ops(call)
    finally:
        for handle in handles:
            handle.remove()
    lost = {op: n - hooked.get(op, 0) for op, n in plain.items() if n > hooked.get(op, 0)}
    added = {op: n - plain.get(op, 0) for op, n in hooked.items() if n > plain.get(op, 0)}
    if not lost and not added:
        return ProgramChange(changed=False)
    paths = sorted({_FAST_PATH_OPS[op] for op in lost if op in _FAST_PATH_OPS})
    note = "layer hooks change the ops the model runs"
    if paths:
        note += f" (hooks turn off the {', '.join(paths)})"
    note += "; layer-level latencies measure the hooked program, model latency comes from the M run"
    return ProgramChange(changed=True, ops_without_hooks_only=dict(sorted(lost.items())), ops_with_hooks_only=dict(sorted(added.items())), note=note)


class ModelAnnotation:
    """Model and layer ranges on a module, attached by `attach()` and taken away by `remove()`.

    nvtx: emit NVTX ranges in the "xsp" domain. torch: record_function annotations -- True,
    False, or "auto" (only while a torch profiler records). layer_sync: called at the end of
    each layer before its range closes (e.g. torch.cuda.synchronize, so a layer's range covers
    its kernels). model_hook: open/close the model range from hooks on the root module.
    called: ids of the modules one forward calls (called_modules), to find leaves by calls.
    """

    def __init__(
        self,
        model,
        name: str | None = None,
        *,
        layers: bool = True,
        depth: int | None = None,
        nvtx: bool = True,
        torch: bool | str = "auto",
        layer_sync: Callable[[], None] | None = None,
        model_hook: bool = True,
        called: set[int] | None = None,
    ):
        self.model = model
        self.name = name or type(model).__name__
        self.depth = depth
        self.layer_sync = layer_sync
        self.model_hook = model_hook
        self.with_layers = layers
        self.called = called
        self.layers = describe_layers(model, depth, called) if layers else []
        self._modules = [m for _, m in select_layers(model, depth, called)] if layers else []
        ranges = RangeFactory(nvtx=nvtx, torch=torch)
        self.model_range = ranges(model_range_name(self.name))
        self._layer_ranges = [ranges(info.range_name) for info in self.layers]
        self._handles: list = []

    @property
    def attached(self) -> bool:
        return bool(self._handles)

    def attach(self) -> ModelAnnotation:
        if self._handles:
            return self
        for module, layer_range in zip(self._modules, self._layer_ranges, strict=True):
            pre, post = layer_range.hooks(self.layer_sync)
            self._handles.append(module.register_forward_pre_hook(pre))
            self._handles.append(module.register_forward_hook(post, always_call=True))
        if self.model_hook:
            # Registered last and prepended, so the model range opens before and closes after a
            # root-level layer range.
            push, pop = self.model_range.push, self.model_range.pop
            self._handles.append(self.model.register_forward_pre_hook(lambda m, a: push(), prepend=True))
            self._handles.append(self.model.register_forward_hook(lambda m, a, o: pop(), always_call=True))
        return self

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles.clear()

    def __enter__(self) -> ModelAnnotation:
        return self.attach()

    def __exit__(self, *exc) -> None:
        self.remove()

    @contextmanager
    def inference(self, sync: Callable[[], None] | None = None):
        """The model range around one inference (when model_hook is off); `sync` runs before it closes."""
        self.model_range.push()
        try:
            yield
            if sync is not None:
                sync()
        finally:
            self.model_range.pop()


def annotate(model, name: str | None = None, **options) -> ModelAnnotation:
    """Attach model and layer ranges to `model` (see ModelAnnotation); `.remove()` restores it.

    Example:
        with annotate(model, "resnet50"):
            model(x)          # one xsp.model range, one xsp.layer range per leaf-module call
    """
    return ModelAnnotation(model, name, **options).attach()
