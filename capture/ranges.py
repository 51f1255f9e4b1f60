"""Range emitters: one named range opened and closed as cheaply as the library allows.

A range goes to NVTX (domain "xsp", registered strings, attributes built once per name), to
the PyTorch profiler as a record_function annotation, and/or to the capture's own timer
(RangeRecorder, which writes a Kineto-format trace without any profiler running), so nsys and
Kineto traces carry the same names. Every emitter is built once per range name; `push`/`pop`
and the wrapped layer forwards are on the hot path of every layer call, so they do no lookups
and no allocation beyond what the libraries need.
"""

from __future__ import annotations

import os
import threading
import time
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

from xsp_trace.naming import XSP_NVTX_DOMAIN

from .manifest import write_json_atomic


def nvtx_version() -> str | None:
    """Version of the installed nvtx package, or None when it is not installed."""
    try:
        from importlib.metadata import PackageNotFoundError, version
    except ImportError:  # pragma: no cover - Python < 3.8
        return None
    try:
        return version("nvtx")
    except PackageNotFoundError:
        return None


class NvtxDomain:
    """The NVTX domain of our ranges and pre-built event attributes per name."""

    def __init__(self, domain: str = XSP_NVTX_DOMAIN):
        try:
            import nvtx
            from nvtx._lib import pop_range, push_range
        except ImportError as exc:
            raise RuntimeError("the nvtx package is not installed: pip install 'nvtx==0.2.11' (the version nsys 2022.4 records)") from exc
        self._domain = nvtx.get_domain(domain)
        self.handle = self._domain.handle
        self.push_range = push_range
        self.pop_range = pop_range

    def attributes(self, name: str):
        return self._domain.get_event_attributes(name, None, None, None)


def _torch_annotation_functions():
    """(enter(name) -> handle, exit(handle)) of a user-scope profiler annotation.

    torch's private _record_function_with_args_enter/exit are the cheapest that a user-scope profile
    records: the public record_function goes through the op dispatcher, and _RecordFunctionFast is
    recorded in the FUNCTION scope, which a user-scope-only profile leaves out (BENCHMARKS.md,
    "Capture overhead").
    """
    from torch._C import _autograd

    enter = getattr(_autograd, "_record_function_with_args_enter", None)
    exit_ = getattr(_autograd, "_record_function_with_args_exit", None)
    if enter is not None and exit_ is not None:
        return enter, exit_
    from torch.autograd.profiler import record_function

    def enter_public(name):
        annotation = record_function(name)
        annotation.__enter__()
        return annotation

    return enter_public, lambda annotation: annotation.__exit__(None, None, None)


def torch_profiler_enabled() -> bool:
    """Whether a torch profiler session is recording (cheap; reads a module flag)."""
    import torch.autograd.profiler as autograd_profiler

    return bool(getattr(autograd_profiler, "_is_profiler_enabled", False))


class RangeRecorder:
    """The capture's own timer and trace writer: ranges timed with perf_counter_ns, no profiler.

    A torch-tool M or ML run needs only its model and layer ranges; an active torch profiler
    would add its callbacks to every op. `write_trace` writes them as a Kineto-format Chrome
    trace (user annotations), which the Kineto converter reads as it reads torch's own.
    """

    def __init__(self):
        # One column per field, the times in arrays: no tuple (a garbage-collected container) is
        # allocated per range, so recording never brings on a cyclic collection mid-inference.
        self.names: list[str] = []
        self.starts = array("q")  # perf_counter_ns
        self.ends = array("q")
        self.threads = array("Q")  # threading.get_ident(): no syscall inside the timed region, unlike gettid
        self.origin_ns = time.perf_counter_ns()  # ts = 0 of the trace
        self.epoch_ns = time.time_ns()  # the wall-clock time of that instant (baseTimeNanoseconds)

    def ender(self, name: str) -> Callable[[int], None]:
        """end(start_ns): stores the range `name` that began at start_ns (perf_counter_ns) and ends now."""
        clock, thread = time.perf_counter_ns, threading.get_ident
        add_name, add_start, add_end, add_thread = self.names.append, self.starts.append, self.ends.append, self.threads.append

        def end(start: int) -> None:
            add_end(clock())
            add_start(start)
            add_name(name)
            add_thread(thread())

        return end

    @property
    def events(self) -> list[tuple[str, int, int, int]]:
        """(name, start ns, end ns, native thread id) of every recorded range (a thread that has
        ended keeps its Python thread ident)."""
        native = {t.ident: t.native_id for t in threading.enumerate()}
        return [(n, s, e, native.get(t) or t) for n, s, e, t in zip(self.names, self.starts, self.ends, self.threads, strict=True)]

    def write_trace(self, path: Path, process_name: str = "python") -> None:
        """The ranges as a Kineto trace: ts/dur in microseconds relative to baseTimeNanoseconds."""
        pid = os.getpid()
        threads = sorted({tid for _, _, _, tid in self.events})
        events: list[dict] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process_name}}]
        events += [{"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": f"thread {tid}"}} for tid in threads]
        for number, (name, start, end, tid) in enumerate(sorted(self.events, key=lambda e: (e[1], -e[2]))):
            events.append(
                {
                    "ph": "X",
                    "cat": "user_annotation",
                    "name": name,
                    "pid": pid,
                    "tid": tid,
                    "ts": round((start - self.origin_ns) / 1000, 3),
                    "dur": round((end - start) / 1000, 3),
                    "args": {"External id": number + 1},
                }
            )
        trace = {"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": self.epoch_ns, "displayTimeUnit": "ms", "traceEvents": events}
        write_json_atomic(path, trace)


class Range:
    """One named range: `push()` opens it, `pop()` closes the innermost one opened by this object;
    `wrap(forward)` is a forward that runs inside the range (how layers get theirs).

    nvtx: emit NVTX push/pop in the xsp domain.
    torch: True = always a record_function; "auto" = only while a torch profiler records;
    False = never.
    recorder: time the range with the capture's own timer into this RangeRecorder.
    """

    __slots__ = ("name", "_nvtx", "_attributes", "_torch", "_enter", "_exit", "_open", "_recorder", "_end", "push", "pop")
    _enter: Callable[[str], Any] | None  # record_function enter(name) -> handle, None without torch ranges
    _exit: Callable[[Any], Any] | None  # its exit(handle), set together with _enter

    def __init__(self, name: str, *, nvtx: NvtxDomain | None, torch: bool | str, torch_functions=None, recorder: RangeRecorder | None = None):
        self.name = name
        self._nvtx = nvtx
        self._attributes = nvtx.attributes(name) if nvtx is not None else None
        self._torch = torch
        self._enter, self._exit = torch_functions if torch else (None, None)
        self._recorder = recorder
        self._end = recorder.ender(name) if recorder is not None else None
        self._open: list = []  # annotation handles (or start times, or None) of the open ranges, innermost last
        if self._only_nvtx():
            # NVTX only (the nsys levels): straight to the C calls, no Python frame of ours between.
            push_range, pop_range, attributes, handle = nvtx.push_range, nvtx.pop_range, self._attributes, nvtx.handle  # type: ignore[union-attr]
            self.push = lambda: push_range(attributes, handle)
            self.pop = lambda: pop_range(handle)
        elif self._only_timer():
            clock, started, end = time.perf_counter_ns, self._open, self._end
            self.push = lambda: started.append(clock())
            self.pop = lambda: end(started.pop())  # type: ignore[misc]
        else:
            self.push = self._push
            self.pop = self._pop

    @property
    def timed_by_caller(self) -> bool:
        """Whether the range can be stored from times its caller took (`record`): a timer-only range."""
        return self._only_timer()

    def record(self, start_ns: int, end_ns: int) -> None:
        """Store the range as [start_ns, end_ns] (perf_counter_ns) read by the caller: a timed
        inference is its own model range, with no clock read added to it."""
        recorder = self._recorder
        recorder.names.append(self.name)  # type: ignore[union-attr]
        recorder.starts.append(start_ns)  # type: ignore[union-attr]
        recorder.ends.append(end_ns)  # type: ignore[union-attr]
        recorder.threads.append(threading.get_ident())  # type: ignore[union-attr]

    def _only_nvtx(self) -> bool:
        return self._nvtx is not None and self._enter is None and self._recorder is None

    def _only_timer(self) -> bool:
        return self._recorder is not None and self._nvtx is None and self._enter is None

    def _push(self) -> None:
        if self._nvtx is not None:
            self._nvtx.push_range(self._attributes, self._nvtx.handle)
        if self._recorder is not None:
            self._open.append(time.perf_counter_ns())
        if self._enter is not None:
            if self._torch is True or torch_profiler_enabled():
                self._open.append(self._enter(self.name))
            else:
                self._open.append(None)

    def _pop(self) -> None:
        if self._exit is not None and self._open:  # _open is non-empty only when _enter (and _exit) are set
            handle = self._open.pop()
            if handle is not None:
                self._exit(handle)
        if self._end is not None and self._open:
            self._end(self._open.pop())
        if self._nvtx is not None:
            self._nvtx.pop_range(self._nvtx.handle)

    def wrap(self, forward: Callable, sync: Callable[[], None] | None = None) -> Callable:
        """`forward` inside this range: the range opens before it runs and closes after it returns
        or raises; `sync` runs before the range closes. NVTX-only and timer-only ranges are
        inlined into the wrapper (one Python frame per layer call: it runs on every call)."""
        if sync is not None:
            push, pop = self.push, self.pop

            def synced_forward(*args, **kwargs):
                push()
                try:
                    result = forward(*args, **kwargs)
                    sync()
                    return result
                finally:
                    pop()

            return synced_forward
        if self._only_nvtx():
            push_range, pop_range, attributes, handle = self._nvtx.push_range, self._nvtx.pop_range, self._attributes, self._nvtx.handle  # type: ignore[union-attr]

            def nvtx_forward(*args, **kwargs):
                push_range(attributes, handle)
                try:
                    return forward(*args, **kwargs)
                finally:
                    pop_range(handle)

            return nvtx_forward
        if self._only_timer():
            recorder, name, clock, thread = self._recorder, self.name, time.perf_counter_ns, threading.get_ident
            add_name, add_start, add_end, add_thread = recorder.names.append, recorder.starts.append, recorder.ends.append, recorder.threads.append  # type: ignore[union-attr]

            def timed_forward(*args, **kwargs):  # RangeRecorder.ender inlined: one frame less per layer call
                start = clock()
                try:
                    return forward(*args, **kwargs)
                finally:
                    add_end(clock())
                    add_start(start)
                    add_name(name)
                    add_thread(thread())

            return timed_forward
        push, pop = self.push, self.pop

        def ranged_forward(*args, **kwargs):
            push()
            try:
                return forward(*args, **kwargs)
            finally:
                pop()

        return ranged_forward


class RangeFactory:
    """Builds `Range`s that share one NVTX domain and one record_function implementation."""

    def __init__(self, *, nvtx: bool = True, torch: bool | str = "auto", timer: bool = False):
        self.nvtx = NvtxDomain() if nvtx else None
        self.torch = torch
        self._torch_functions = _torch_annotation_functions() if torch else None
        self.recorder = RangeRecorder() if timer else None

    def __call__(self, name: str) -> Range:
        return Range(name, nvtx=self.nvtx, torch=self.torch, torch_functions=self._torch_functions, recorder=self.recorder)
