"""xsp-trace's own vocabularies as Literal types: the values it stores in the database and names on the
command line, so mypy checks every place that writes one and the tuples below are derived, not repeated.

Facts about external formats (nsys tables, Kineto fields) live in xsp_trace/formats/ instead.
"""

from __future__ import annotations

from typing import Literal, get_args

# runs.source_kind: which converter read the trace.
SourceKind = Literal["nsys", "kineto"]
SOURCE_KINDS: tuple[SourceKind, ...] = get_args(SourceKind)

# runs.level: the leveled measurement's levels, outermost first (docs/design.md "Leveled measurement").
Level = Literal["M", "ML", "MLG"]
LEVELS: tuple[Level, ...] = get_args(Level)

# The profilers `xsp-trace capture` runs the script under (capture/session.py).
CaptureTool = Literal["nsys", "torch", "ncu", "torch+nsys"]
CAPTURE_TOOLS: tuple[CaptureTool, ...] = get_args(CaptureTool)

# Finding.kind (xsp_trace/analyze/findings/*.py): what `analyze --findings` can say.
FindingKind = Literal[
    # One per cause of analyses/step_causes.sql (xsp_trace/analyze/findings/step_causes.py KIND_OF_CAUSE).
    "data_loading",
    "cpu_before_gpu",
    "cpu_bound",
    "optimizer",
    "launch_overhead",
    "sync_gpu_idle",
    "gpu_bound",
    "gpu_copies",
    "communication_on_path",
    "stream_wait",
    "gpu_idle_on_path",
    "unrecorded_cpu_time",
    "straggler_rank",
    # Per experiment or GPU.
    "memory_bound_kernels",
    "non_gpu_layers",
    "profiling_overhead",
    "program_changed",
    "healthy",
    "unusable_capture",
]
FINDING_KINDS: tuple[FindingKind, ...] = get_args(FindingKind)
