"""xsp_trace.capture: the side of xsp-trace that runs beside the model (needs nvtx and torch only).

    from xsp_trace.capture import run
    run(model, lambda batch_size: torch.randn(batch_size, 3, 32, 32), name="tiny_cnn")

- `run(model, make_input)`: under `xsp-trace capture` measures the (level, batch size) the
  runner asks for; on its own, a leveled capture with torch.profiler into ./xsp-run.
- `capture_model(model, make_input, out, levels=..., batch_sizes=...)`: the in-process API.
- `annotate(model, name)`: model/layer NVTX + record_function ranges on any module
  (`.remove()` takes them away again).
- `capture_levels(CaptureRequest(...))`: the runner behind `xsp-trace capture`.

Submodules import torch lazily, so `import xsp_trace.capture` stays cheap.
"""

from __future__ import annotations

_EXPORTS = {
    "run": "api",
    "capture_model": "api",
    "annotate": "hooks",
    "ModelAnnotation": "hooks",
    "LayerInfo": "hooks",
    "CaptureRequest": "runner",
    "capture_levels": "runner",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(f".{module}", __name__), name)
