"""Model and layer annotation of a PyTorch nn.Module: NVTX / record_function / timed ranges.

- The model range ("xsp.model:<name>") encloses each inference: either explicitly
  (`with annotation.inference(): model(x)`) or around the root module's forward (model_hook=True).
- Layer ranges ("xsp.layer:<index>:<qualified name>:<type>") enclose each call of a selected
  module: its `forward` is replaced, on the instance, by one that runs the original inside the
  range (try/finally, so an exception inside a layer still closes it). Not module hooks: a
  module with hooks leaves torch's fast call path (BENCHMARKS.md, "Capture overhead")
  and some modules check for hooks (nn.TransformerEncoderLayer then leaves its fused fast path).
- Layers are the leaf modules by default; `depth=d` takes the modules d levels below the root
  (plus leaves above that depth) for coarser layers. Given the modules one forward called
  (`called_modules`), a module whose children are never called (nn.MultiheadAttention uses its
  out_proj weights without calling it) counts as a leaf. Indices follow the module tree order
  (named_modules), so they are stable across runs, batch sizes and levels.
- `remove()` takes every wrapper away again: the modules are as before.

Which modules one forward calls (`called_modules`), their shapes (`probe_layers`) and whether the
layer wrappers change the ops the model runs (`compare_programs`, under a dispatch-level op
counter, so the capture can record a change) are found with the same kind of wrapper, so they
describe the program the layer run times.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
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


_NO_FORWARD = object()  # the module had no instance-level forward before ours


def install_forward(module, forward: Callable) -> Any:
    """Put `forward` on the module instance (torch's __call__ calls self.forward); returns what
    was there before, for restore_forward. Written to __dict__: nn.Module.__setattr__ is slower
    and would refuse nothing here."""
    previous = module.__dict__.get("forward", _NO_FORWARD)
    module.__dict__["forward"] = forward
    return previous


def restore_forward(module, previous: Any) -> None:
    if previous is _NO_FORWARD:
        module.__dict__.pop("forward", None)
    else:
        module.__dict__["forward"] = previous


@contextmanager
def wrapped_forwards(modules: Iterable, make_wrapper: Callable[[Any, Callable], Callable]):
    """Each module's forward replaced by make_wrapper(module, its forward) for the block."""
    installed = []
    try:
        for module in modules:
            installed.append((module, install_forward(module, make_wrapper(module, module.forward))))
        yield
    finally:
        for module, previous in reversed(installed):
            restore_forward(module, previous)


def called_modules(model, call: Callable[[], Any]) -> set[int]:
    """ids of the modules whose forward one `call()` (a forward of the model) runs."""
    called: set[int] = set()

    def noting(module, forward):
        key = id(module)

        def forward_noted(*args, **kwargs):
            called.add(key)
            return forward(*args, **kwargs)

        return forward_noted

    with wrapped_forwards(model.modules(), noting):
        call()
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
    info_of = {id(module): info for info, module in zip(infos, modules, strict=True)}

    def recording(module, forward):
        info = info_of[id(module)]

        def forward_recorded(*args, **kwargs):
            output = forward(*args, **kwargs)
            calls[info.index] += 1
            if calls[info.index] == 1:
                info.input_shapes = shapes_of(args)
                info.output_shapes = shapes_of(output)
            return output

        return forward_recorded

    with wrapped_forwards(modules, recording):
        call()
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
    """How the layer wrappers changed the ops one forward runs (empty when they did not).

    (The field names keep the session format: "hooks" is the layer instrumentation.)"""

    changed: bool
    ops_without_hooks_only: dict = field(default_factory=dict)  # op -> calls lost when the layers are instrumented
    ops_with_hooks_only: dict = field(default_factory=dict)  # op -> calls added when the layers are instrumented
    note: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


_FAST_PATH_OPS = {
    "_transformer_encoder_layer_fwd": "nn.TransformerEncoderLayer fused fast path",
    "_native_multi_head_attention": "nn.MultiheadAttention fused fast path",
}


def compare_programs(model, call: Callable[[], Any], depth: int | None = None, called: set[int] | None = None) -> ProgramChange:
    """Ops of one forward without vs with (silent) layer wrappers, as ModelAnnotation installs them."""
    plain = count_ops(call)

    def silent(module, forward):
        def forward_passed(*args, **kwargs):
            return forward(*args, **kwargs)

        return forward_passed

    with wrapped_forwards([m for _, m in select_layers(model, depth, called)], silent):
        hooked = count_ops(call)
    lost = {op: n - hooked.get(op, 0) for op, n in plain.items() if n > hooked.get(op, 0)}
    added = {op: n - plain.get(op, 0) for op, n in hooked.items() if n > plain.get(op, 0)}
    if not lost and not added:
        return ProgramChange(changed=False)
    paths = sorted({_FAST_PATH_OPS[op] for op in lost if op in _FAST_PATH_OPS})
    note = "layer instrumentation changes the ops the model runs"
    if paths:
        note += f" (it turns off the {', '.join(paths)})"
    note += "; layer-level latencies measure the instrumented program, model latency comes from the M run"
    return ProgramChange(changed=True, ops_without_hooks_only=dict(sorted(lost.items())), ops_with_hooks_only=dict(sorted(added.items())), note=note)


class ModelAnnotation:
    """Model and layer ranges on a module, attached by `attach()` and taken away by `remove()`.

    nvtx: emit NVTX ranges in the "xsp" domain. torch: record_function annotations -- True,
    False, or "auto" (only while a torch profiler records). timer: time the ranges with the
    capture's own clock into `self.recorder` (a RangeRecorder; no profiler needed). layer_sync:
    called at the end of each layer before its range closes (e.g. torch.cuda.synchronize, so a
    layer's range covers its kernels). model_hook: the model range around the root module's
    forward. called: ids of the modules one forward calls (called_modules), to find leaves by calls.
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
        timer: bool = False,
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
        ranges = RangeFactory(nvtx=nvtx, torch=torch, timer=timer)
        self.recorder = ranges.recorder
        self.model_range = ranges(model_range_name(self.name))
        self._layer_ranges = [ranges(info.range_name) for info in self.layers]
        self._installed: list = []  # (module, its previous instance forward), in install order

    @property
    def attached(self) -> bool:
        return bool(self._installed)

    def attach(self) -> ModelAnnotation:
        if self._installed:
            return self
        for module, layer_range in zip(self._modules, self._layer_ranges, strict=True):
            self._installed.append((module, install_forward(module, layer_range.wrap(module.forward, self.layer_sync))))
        if self.model_hook:
            # Wrapped last, so the model range encloses a root-level layer range.
            self._installed.append((self.model, install_forward(self.model, self.model_range.wrap(self.model.forward))))
        return self

    def remove(self) -> None:
        for module, previous in reversed(self._installed):
            restore_forward(module, previous)
        self._installed.clear()

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
