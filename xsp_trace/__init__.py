"""xsp-trace: across-stack profiling of ML models on GPUs (after XSP, Li et al., IPDPS 2020)."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# The wheel ships the capture side as xsp_trace/capture; in a source checkout it lives in
# ../capture, so let the package find it there too.
_checkout = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).parent / "capture").exists() and (_checkout / "capture" / "__init__.py").exists():
    __path__.append(str(_checkout))  # type: ignore[name-defined]
