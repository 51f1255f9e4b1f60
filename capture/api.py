"""The script-facing API: `run` (under the runner or on its own) and `capture_model` (in process)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from xsp_trace.naming import MODEL_PREFIX

from .manifest import (
    LEVELS,
    SESSION_NAME,
    absorb_session,
    finish_capture,
    finish_run,
    new_manifest,
    remove_run_dir,
    run_entry,
)
from .session import LAYER_SYNC_CHOICES, SessionConfig, measure

_measured_in_this_process = False


def _check_model(model) -> None:
    import torch

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"no model found: xsp_trace.capture needs a torch.nn.Module, got {type(model).__name__}")


def run(
    model,
    make_input: Callable[[int], Any],
    *,
    name: str | None = None,
    batch_size: int = 1,
    iterations: int = 100,
    warmup: int = 10,
    depth: int | None = None,
    out: str | os.PathLike | None = None,
    levels: Sequence[str] = LEVELS,
    step: Callable[[Any, Any], Any] | None = None,
) -> dict:
    """Profile `model` on `make_input(batch_size)` the way the caller asks.

    Under `xsp-trace capture` (XSP_LEVEL set): the one (level, batch size) the runner asks
    for, recorded by the runner's tool; returns the session record. Run on its own: a leveled
    capture in this process with torch.profiler into `out` (default ./xsp-run); returns the
    manifest. make_input returns a tensor (model(x)), a tuple (model(*x)) or a dict (model(**x)).
    step: a training step instead of an inference, called as step(model, make_input(batch_size))
    (forward, loss.backward(), optimizer step...); one model range encloses each step.
    """
    global _measured_in_this_process
    _check_model(model)
    if "XSP_LEVEL" not in os.environ:
        return capture_model(
            model,
            make_input,
            out=out or "xsp-run",
            name=name,
            levels=levels,
            batch_sizes=[batch_size],
            iterations=iterations,
            warmup=warmup,
            depth=depth,
            overwrite=True,
            step=step,
        )
    if _measured_in_this_process:
        raise RuntimeError("xsp_trace.capture.run was called twice in one profiled process; profile one model per script")
    config = SessionConfig.from_env()
    if config.depth is None:
        config.depth = depth
    _measured_in_this_process = True
    return measure(model, make_input, config, name=name, step=step)


def capture_model(
    model,
    make_input: Callable[[int], Any],
    out: str | os.PathLike,
    *,
    name: str | None = None,
    levels: Sequence[str] = LEVELS,
    batch_sizes: Sequence[int] = (1,),
    iterations: int = 100,
    warmup: int = 10,
    depth: int | None = None,
    layer_sync: str = "sync",
    overwrite: bool = False,
    step: Callable[[Any, Any], Any] | None = None,
) -> dict:
    """Leveled capture of a model in this process, recorded by torch.profiler; returns the manifest.

    Writes the same run directory as `xsp-trace capture --tool torch` (convert it with
    `xsp-trace convert OUT`). nsys and ncu record whole processes: use the CLI runner for them.
    """
    _check_model(model)
    bad = [lv for lv in levels if lv not in LEVELS]
    if bad:
        raise ValueError(f"unknown level(s) {bad}; use {', '.join(LEVELS)}")
    if layer_sync not in LAYER_SYNC_CHOICES:
        raise ValueError(f"unknown layer_sync {layer_sync!r}; use one of {', '.join(LAYER_SYNC_CHOICES)}")
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise FileExistsError(f"{out} already exists and is not empty (pass overwrite=True)")
    remove_run_dir(out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    manifest = new_manifest(
        command=None,
        levels=levels,
        batch_sizes=batch_sizes,
        iterations=iterations,
        warmup=warmup,
        tools={"torch.profiler": None},
        options={"tools": ["torch"], "depth": depth, "layer_sync": layer_sync, "in_process": True},
        env={},
    )
    for batch_size in batch_sizes:
        for level in levels:
            entry = run_entry("torch", level, batch_size)
            manifest["runs"].append(entry)
            folder = out / entry["dir"]
            config = SessionConfig(
                level=level, tool="torch", batch_size=batch_size, iterations=iterations, warmup=warmup, out=folder, depth=depth, layer_sync=layer_sync
            )
            started = time.perf_counter()
            session = measure(model, make_input, config, name=name, step=step)
            entry["wall_s"] = round(time.perf_counter() - started, 3)
            absorb_session(manifest, session)
            entry["session"] = str((folder / SESSION_NAME).relative_to(out))
            entry["trace"] = str((folder / session["trace"]).relative_to(out))
            entry["model_ranges"] = (folder / session["trace"]).read_bytes().count(b'"' + MODEL_PREFIX.encode())
            finish_run(manifest, out, entry)
    return finish_capture(manifest, out)
