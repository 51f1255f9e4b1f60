"""Range emitters: one named range opened and closed as cheaply as the library allows.

A range goes to NVTX (domain "xsp", registered strings, attributes built once per name) and/or
to the PyTorch profiler as a record_function annotation, so nsys and Kineto traces carry the
same names. Every emitter is built once per range name; `push`/`pop` are on the hot path of
each forward hook, so they do no lookups and no allocation beyond what the libraries need.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xsp_trace.naming import XSP_NVTX_DOMAIN


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

    torch's private _record_function_with_args_enter/exit cost ~1.5 us per range here; the
    public record_function goes through the op dispatcher (~20 us), and _RecordFunctionFast is
    cheaper but recorded in the FUNCTION scope, which a user-scope-only profile leaves out.
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


class Range:
    """One named range: `push()` opens it, `pop()` closes the innermost one opened by this object.

    nvtx: emit NVTX push/pop in the xsp domain.
    torch: True = always a record_function; "auto" = only while a torch profiler records;
    False = never.
    """

    __slots__ = ("name", "_nvtx", "_attributes", "_torch", "_enter", "_exit", "_open", "push", "pop")
    _enter: Callable[[str], Any] | None  # record_function enter(name) -> handle, None without torch ranges
    _exit: Callable[[Any], Any] | None  # its exit(handle), set together with _enter

    def __init__(self, name: str, *, nvtx: NvtxDomain | None, torch: bool | str, torch_functions=None):
        self.name = name
        self._nvtx = nvtx
        self._attributes = nvtx.attributes(name) if nvtx is not None else None
        self._torch = torch
        self._enter, self._exit = torch_functions if torch else (None, None)
        self._open: list = []  # annotation handles (or None) of the open ranges, innermost last
        if nvtx is not None and self._enter is None:
            # NVTX only (the nsys levels): straight to the C calls, no Python frame of ours between.
            push_range, pop_range, attributes, handle = nvtx.push_range, nvtx.pop_range, self._attributes, nvtx.handle
            self.push = lambda: push_range(attributes, handle)
            self.pop = lambda: pop_range(handle)
        else:
            self.push = self._push
            self.pop = self._pop

    def _push(self) -> None:
        if self._nvtx is not None:
            self._nvtx.push_range(self._attributes, self._nvtx.handle)
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
        if self._nvtx is not None:
            self._nvtx.pop_range(self._nvtx.handle)

    def hooks(self, sync=None):
        """(forward pre-hook, forward hook) that open and close this range around a module call.

        NVTX-only ranges call the NVTX C functions directly from the hook (one Python frame per
        hook: the hooks run on every layer call). `sync` runs before the range closes.
        """
        if self._nvtx is not None and self._enter is None:
            push_range, pop_range, attributes, handle = self._nvtx.push_range, self._nvtx.pop_range, self._attributes, self._nvtx.handle

            def nvtx_pre(module, args):
                push_range(attributes, handle)

            if sync is None:

                def nvtx_post(module, args, output):
                    pop_range(handle)
            else:

                def nvtx_post(module, args, output):
                    sync()
                    pop_range(handle)

            return nvtx_pre, nvtx_post
        push, pop = self._push, self._pop

        def pre(module, args):
            push()

        if sync is None:

            def post(module, args, output):
                pop()
        else:

            def post(module, args, output):
                sync()
                pop()

        return pre, post


class RangeFactory:
    """Builds `Range`s that share one NVTX domain and one record_function implementation."""

    def __init__(self, *, nvtx: bool = True, torch: bool | str = "auto"):
        self.nvtx = NvtxDomain() if nvtx else None
        self.torch = torch
        self._torch_functions = _torch_annotation_functions() if torch else None

    def __call__(self, name: str) -> Range:
        return Range(name, nvtx=self.nvtx, torch=self.torch, torch_functions=self._torch_functions)
