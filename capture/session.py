"""The script side of a leveled capture: one (level, batch size) measured in this process.

A user script hands its model and an input factory to `xsp_trace.capture.run(model,
make_input)`. Under `xsp-trace capture` the runner launches the script once per (tool, level,
batch size) with these environment variables, and `run` measures exactly that:

    XSP_LEVEL       M | ML | MLG | metrics:<group>
    XSP_TOOL        nsys | torch | ncu   (who records: an outside profiler, or torch.profiler here)
    XSP_BATCH_SIZE  passed to make_input(batch_size)
    XSP_ITERATIONS  profiled inferences (one model range each)
    XSP_WARMUP      un-profiled inferences first
    XSP_DEPTH       layer depth (empty: leaf modules)
    XSP_LAYER_SYNC  none | sync (synchronize the device at each layer end, ML only)
    XSP_OUT         the run's folder: session.json (+ trace.json for torch) go there

One measurement: warm-up; a probe forward (layer shapes, calls) and, for levels with layers, a
comparison of the ops run with and without the layer wrappers; then the same inference timed
with time.perf_counter_ns, instrumented (ranges on, profiler recording) and not. The two
alternate inference by inference, the order flipped every pair, so drift and bursts of machine
noise hit both alike: the layer wrappers are installed only for the instrumented one. The
torch tool's M and ML runs start no profiler: the capture times its model and layer ranges
itself and writes them as a Kineto trace (ranges.RangeRecorder), so no op pays for profiler
callbacks; its MLG run starts torch.profiler once and pauses it for the un-instrumented
inferences. Under ncu (and, at MLG, a torch without toggle_collection_dynamic) half of the
un-instrumented inferences run before the instrumented loop and half after. Inference runs
under torch.inference_mode(); a training step (`step`, e.g. forward + loss.backward() +
optimizer.step()) with autograd on, its model range around the whole step.
"""

from __future__ import annotations

import math
import os
import resource
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xsp_trace.vocabulary import CAPTURE_TOOLS

from .hooks import ModelAnnotation, called_modules, compare_programs, describe_layers, probe_layers
from .manifest import FORMAT_VERSION, OWN_TIMER_LEVELS, SESSION_FORMAT, SESSION_NAME, level_has_layers, recorded_by_own_timer, write_json_atomic
from .ranges import nvtx_version

TOOLS = CAPTURE_TOOLS
OWN_TIMER_SCOPE = "none"  # profiler_scope of those runs: no profiler recorded anything
LAYER_SYNC_CHOICES = ("none", "sync", "launch-blocking")


@dataclass
class SessionConfig:
    level: str
    tool: str
    batch_size: int
    iterations: int
    warmup: int
    out: Path
    depth: int | None = None
    layer_sync: str = "none"
    own_timer: bool | None = None  # ranges timed by the capture itself; None: the tool's default (manifest.recorded_by_own_timer)

    def __post_init__(self) -> None:
        if self.own_timer is None:
            self.own_timer = recorded_by_own_timer(self.tool, self.level)

    @classmethod
    def from_env(cls, environ=os.environ) -> SessionConfig:
        def number(key: str) -> int:
            text = environ.get(key, "")
            try:
                return int(text)
            except ValueError:
                raise RuntimeError(f"{key}={text!r} is not an integer (set by xsp-trace capture)") from None

        depth = environ.get("XSP_DEPTH", "")
        level, tool = environ["XSP_LEVEL"], environ.get("XSP_TOOL", "torch")
        timer = environ.get("XSP_OWN_TIMER", "")  # set by the runner; without it, the default of the tool
        return cls(
            level=level,
            tool=tool,
            batch_size=number("XSP_BATCH_SIZE"),
            iterations=number("XSP_ITERATIONS"),
            warmup=number("XSP_WARMUP"),
            out=Path(environ["XSP_OUT"]),
            depth=int(depth) if depth else None,
            layer_sync=environ.get("XSP_LAYER_SYNC", "none") or "none",
            own_timer=timer == "1" if timer else None,
        )


def _as_call(model, value) -> Callable[[], Any]:
    """make_input's value -> a no-argument call: tensor x -> model(x), tuple -> model(*x), dict -> model(**x)."""
    if isinstance(value, dict):
        return lambda: model(**value)
    if isinstance(value, tuple):
        return lambda: model(*value)
    return lambda: model(value)


def _device_of(model, value):
    import torch

    for p in model.parameters():
        return p.device
    for v in value.values() if isinstance(value, dict) else value if isinstance(value, tuple) else (value,):
        if isinstance(v, torch.Tensor):
            return v.device
    return torch.device("cpu")


def _device_sync(device) -> Callable[[], None] | None:
    import torch

    if device.type == "cuda":
        return torch.cuda.synchronize
    return None


def _device_facts(device) -> dict:
    import torch

    facts = {"type": device.type, "index": device.index, "name": None}
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        facts.update(
            index=index,
            name=props.name,
            sm_count=props.multi_processor_count,
            memory_bytes=props.total_memory,
            compute=f"{props.major}.{props.minor}",
        )
    else:
        facts["name"] = "cpu"
    return facts


def _can_pause_profiler() -> bool:
    """Whether this torch can stop and resume a profiler session's collection (torch >= 2.4)."""
    import torch.autograd.profiler as autograd_profiler

    return hasattr(autograd_profiler.profile, "toggle_collection_dynamic")


@contextmanager
def _quiet_stderr():
    """File descriptor 2 to /dev/null for the block (silences C++ warnings torch prints there)."""
    import sys

    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _timed_loop(call, n: int, sync, model_range=None) -> list[int]:
    """n timed inferences, each inside `model_range` when given (its push/pop called directly:
    what the instrumented inference pays beyond the plain one is the range and nothing else; a
    range of the capture's own timer is the timed interval itself, stored after it ends)."""
    latencies = []
    clock = time.perf_counter_ns
    for _ in range(n):
        if model_range is not None and model_range.timed_by_caller:
            start = clock()
            call()
            if sync is not None:
                sync()
            end = clock()
            model_range.record(start, end)
            latencies.append(end - start)
            continue
        if model_range is None:
            start = clock()
            call()
            if sync is not None:
                sync()
            latencies.append(clock() - start)
            continue
        push, pop = model_range.push, model_range.pop
        start = clock()
        push()
        try:
            call()
            if sync is not None:
                sync()
        finally:
            pop()
        latencies.append(clock() - start)
    return latencies


def _package_path() -> str | None:
    package = sys.modules.get("xsp_trace")
    return str(Path(package.__file__).resolve().parent) if package is not None and package.__file__ else None


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


class _ProfilerContext:
    """Enter/exit/export shared by the torch profilers below (self.profile is the torch object)."""

    profile: Any = None  # the torch profiler object, set by the subclass
    activities: list = []

    def __enter__(self):
        self.profile.__enter__()
        return self

    def __exit__(self, *exc):
        return self.profile.__exit__(*exc)

    def export(self, path: Path) -> None:
        self.profile.export_chrome_trace(str(path))

    def pause(self, paused: bool) -> None:
        """Stop (True) or resume (False) recording inside the running session: torch removes or
        re-installs its op callbacks (CPU, the user scope kept); CUDA activity is toggled with them
        (Kineto's toggleCollectionDynamic; not yet run on a GPU by this project)."""
        with _quiet_stderr():  # torch warns on every toggle that CPU and GPU tracks may mix
            self.profile.toggle_collection_dynamic(not paused, self.activities)


class _UserScopeProfiler(_ProfilerContext):
    """torch profiler that records only user annotations (record_function), not every aten op.

    torch.profiler with CPU activity records all ops, so a profiler "M" or "ML" run would really
    be MLG (docs/design.md, "Leveled measurement"). The Kineto profiler accepts a set of RecordFunction scopes when it is
    enabled; this passes {USER_SCOPE}. Falls back to the full CPU profile when this torch lacks
    the private argument (then `scope` says "all").
    """

    def __init__(self):
        import torch.autograd.profiler as autograd_profiler
        from torch.profiler import ProfilerActivity

        self.scope = "user"
        outer = self

        class _Profile(autograd_profiler.profile):
            def _start_trace(self):
                try:
                    from torch._C._autograd import _enable_profiler
                    from torch._C._profiler import RecordScope
                except ImportError:
                    outer.scope = "all"
                    return super()._start_trace()
                self.entered = True
                on_start = getattr(autograd_profiler, "_run_on_profiler_start", None)
                if on_start is not None:
                    on_start()
                try:
                    # torch's stub declares two parameters; builds with RecordFunction scopes take a third (else TypeError)
                    _enable_profiler(
                        self.config(create_trace_id=False),
                        self.kineto_activities,  # type: ignore[call-arg, unused-ignore]
                        {RecordScope.USER_SCOPE},
                    )
                except TypeError:
                    outer.scope = "all"
                    _enable_profiler(self.config(create_trace_id=False), self.kineto_activities)
                self.profiling_start_time_ns = time.perf_counter_ns()

        self.profile = _Profile(use_kineto=True)
        self.activities = [ProfilerActivity.CPU]


class _FullProfiler(_ProfilerContext):
    """torch.profiler with CPU activity (aten ops, shapes) and CUDA activity on a GPU: the G level."""

    scope = "all"

    def __init__(self, cuda: bool):
        import torch.profiler as tp

        activities = [tp.ProfilerActivity.CPU] + ([tp.ProfilerActivity.CUDA] if cuda else [])
        self.profile = tp.profile(activities=activities, record_shapes=True)
        self.activities = activities


class _CudaProfilerRange:
    """cudaProfilerStart/Stop around the instrumented loop: what ncu --profile-from-start off replays."""

    scope = None

    def __enter__(self):
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        return self

    def __exit__(self, *exc):
        import torch

        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return False


def _interleaved(call, iterations: int, sync, annotation, faults: dict, pause=None):
    """Un-instrumented and instrumented inferences alternating, their order flipped every pair.

    pause(True) stops a running profiler from recording before each un-instrumented inference and
    pause(False) resumes it after (outside the timed region), so under torch.profiler too the
    un-instrumented inferences run with no hooks, no ranges and no profiler callbacks.
    """
    plain: list[int] = []
    instrumented: list[int] = []
    faults.update(uninstrumented=0, instrumented=0)
    for i in range(iterations):
        for with_ranges in (False, True) if i % 2 == 0 else (True, False):
            if with_ranges:
                annotation.attach()
            elif pause is not None:
                pause(True)
            start_faults = _minor_faults()
            try:
                latency = _timed_loop(call, 1, sync, annotation.model_range if with_ranges else None)[0]
            finally:
                if with_ranges:
                    annotation.remove()
                elif pause is not None:
                    pause(False)
            faults["instrumented" if with_ranges else "uninstrumented"] += _minor_faults() - start_faults
            (instrumented if with_ranges else plain).append(latency)
    return plain, ["interleaved"] * len(plain), instrumented


def _interleaved_own_timer(call, config: SessionConfig, sync, annotation, faults: dict, record: dict):
    """M and ML runs (the torch tool's; the nsys tool's unless --nvtx-ranges): no profiler, the
    ranges the capture timed itself become trace.json."""
    plain, phases, instrumented = _interleaved(call, config.iterations, sync, annotation, faults)
    trace = config.out / "trace.json"
    annotation.recorder.write_trace(trace)
    record["trace"] = trace.name
    record["profiler_scope"] = OWN_TIMER_SCOPE
    return plain, phases, instrumented


def _torch_profiler(config: SessionConfig, device):
    """The profiler of a torch-tool run: only MLG has one (M and ML use the capture's own timer;
    _UserScopeProfiler, which they used, stays for recording user annotations alone). Under nsys
    (torch+nsys) CPU activity only: nsys owns the process's CUDA tracing (docs/two_profilers.md)."""
    return _FullProfiler(cuda=device.type == "cuda" and config.tool == "torch")


def _interleaved_under_torch(call, config: SessionConfig, sync, annotation, device, faults: dict, record: dict):
    """The torch tool: one profiler session; inside it un-instrumented and instrumented inferences
    alternate as under nsys, the profiler paused (toggle_collection_dynamic) for the un-instrumented ones."""
    profiler = _torch_profiler(config, device)
    with profiler:
        plain, phases, instrumented = _interleaved(call, config.iterations, sync, annotation, faults, pause=profiler.pause)
    trace = config.out / "trace.json"
    profiler.export(trace)
    record["trace"] = trace.name
    record["profiler_scope"] = profiler.scope
    return plain, phases, instrumented


def _before_during_after(call, config: SessionConfig, sync, annotation, device, faults: dict, record: dict):
    """Half the un-instrumented loop, the instrumented loop under the profiler, the other half."""
    start_faults = _minor_faults()
    before = _timed_loop(call, math.ceil(config.iterations / 2), sync)
    faults["uninstrumented"] = _minor_faults() - start_faults
    profiler = None
    if config.tool == "ncu" and device.type == "cuda":
        profiler = _CudaProfilerRange()  # ncu runs with --profile-from-start off
    elif config.tool in ("torch", "torch+nsys"):
        profiler = _torch_profiler(config, device)
    annotation.attach()
    try:
        start_faults = _minor_faults()
        if profiler is not None:
            with profiler:
                instrumented = _timed_loop(call, config.iterations, sync, annotation.model_range)
        else:
            instrumented = _timed_loop(call, config.iterations, sync, annotation.model_range)
        faults["instrumented"] = _minor_faults() - start_faults
    finally:
        annotation.remove()
    if profiler is not None and hasattr(profiler, "export"):
        trace = config.out / "trace.json"
        profiler.export(trace)
        record["trace"] = trace.name
        record["profiler_scope"] = profiler.scope
    start_faults = _minor_faults()
    after = _timed_loop(call, config.iterations // 2, sync)
    faults["uninstrumented"] += _minor_faults() - start_faults
    return before + after, ["before"] * len(before) + ["after"] * len(after), instrumented


def measure(
    model, make_input: Callable[[int], Any], config: SessionConfig, *, name: str | None = None, step: Callable[[Any, Any], Any] | None = None
) -> dict:
    """Measure one (level, batch size) in this process; writes and returns the session record.

    step(model, value): one training step on make_input's value, timed in place of the forward.
    """
    import torch

    if config.tool not in TOOLS:
        raise ValueError(f"unknown tool {config.tool!r}; expected one of {', '.join(TOOLS)}")
    config.out.mkdir(parents=True, exist_ok=True)
    with_layers = level_has_layers(config.level)
    value = make_input(config.batch_size)
    call = _as_call(model, value) if step is None else (lambda: step(model, value))
    device = _device_of(model, value)
    sync = _device_sync(device)
    layer_sync = sync if (with_layers and config.layer_sync == "sync" and config.level == "ML") else None
    faults: dict[str, int] = {}
    record: dict = {
        "format": SESSION_FORMAT,
        "version": FORMAT_VERSION,
        "level": config.level,
        "tool": config.tool,
        "batch_size": config.batch_size,
        "iterations": config.iterations,
        "warmup": config.warmup,
        "depth": config.depth,
        "layer_sync": config.layer_sync if with_layers else None,
        "model": name or type(model).__name__,
        "model_type": f"{type(model).__module__}.{type(model).__qualname__}",
        "training": bool(model.training),
        "step": "training" if step is not None else "inference",
        "device": _device_facts(device),
        "torch_version": torch.__version__,
        "nvtx_version": nvtx_version(),
        # Which copy of xsp_trace the script imported (the runner warns when it is not its own).
        "xsp_trace_path": _package_path(),
        "threads": torch.get_num_threads(),
        "pid": os.getpid(),
        "env": {
            k: os.environ[k]
            for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "CUDA_LAUNCH_BLOCKING", "OMP_NUM_THREADS")
            if k in os.environ
        },
        "profiler_scope": None,
        "trace": None,
    }
    with torch.inference_mode() if step is None else torch.enable_grad():
        for _ in range(config.warmup):
            call()
        if sync is not None:
            sync()
        called = called_modules(model, call)
        layers = describe_layers(model, config.depth, called)
        probe_layers(model, call, layers, config.depth, called)
        change = compare_programs(model, call, config.depth, called) if with_layers else None

        own_timer = bool(config.own_timer) and config.level in OWN_TIMER_LEVELS
        annotation = ModelAnnotation(
            model,
            record["model"],
            layers=with_layers,
            depth=config.depth,
            nvtx=config.tool in ("nsys", "ncu", "torch+nsys") and not own_timer,
            torch=config.tool in ("torch", "torch+nsys") and not own_timer,
            layer_sync=layer_sync,
            model_hook=False,
            called=called,
            timer=own_timer,
        )
        if own_timer:
            plain, phases, instrumented = _interleaved_own_timer(call, config, sync, annotation, faults, record)
        elif config.tool == "nsys":
            # Nothing to start or stop: alternate single inferences (layer wrappers installed only
            # for the instrumented one), so bursts of machine noise hit both loops alike.
            plain, phases, instrumented = _interleaved(call, config.iterations, sync, annotation, faults)
        elif config.tool in ("torch", "torch+nsys") and _can_pause_profiler():
            plain, phases, instrumented = _interleaved_under_torch(call, config, sync, annotation, device, faults, record)
        else:
            plain, phases, instrumented = _before_during_after(call, config, sync, annotation, device, faults, record)

    record.update(
        latencies_ns={"uninstrumented": plain, "uninstrumented_phase": phases, "instrumented": instrumented},
        minor_faults=faults,
        layers=[info.to_json() for info in layers],
        program_change=change.to_json() if change is not None else None,
    )
    write_json_atomic(config.out / SESSION_NAME, record)
    return record
