"""The leveled runner: the user's command launched once per (tool, level, batch size).

    xsp-trace capture --levels M,ML,MLG --batch-sizes 1,8 --tool torch -- python infer.py

Each launch runs under its profiler (nsys / ncu outside the process, torch.profiler inside it)
with the XSP_* environment variables that xsp_trace.capture.run reads (see session.py). The
runner checks every run as it ends (exit status, session record, model ranges in the trace),
rewrites the manifest after each one, and on a failure stops with one clear line that lists
what was captured so far; everything captured stays in the run directory.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from xsp_trace.errors import InputError
from xsp_trace.naming import MODEL_PREFIX

from . import tools as tl
from .manifest import (
    LEVELS,
    MANIFEST_NAME,
    METRICS_LEVEL_PREFIX,
    SESSION_NAME,
    absorb_session,
    captured_so_far,
    finish_capture,
    finish_run,
    is_run_dir,
    list_files,
    new_manifest,
    read_session,
    recorded_by_own_timer,
    remove_run_dir,
    run_entry,
    write_json_atomic,
)
from .session import LAYER_SYNC_CHOICES

# glibc malloc settings that keep short profiled processes from page-faulting on every large
# allocation (docs/design.md, "Leveled measurement"); set unless the user set them.
MALLOC_TUNING = {"MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TRIM_THRESHOLD_": "268435456"}
RUNNER_TOOLS = ("torch", "nsys", "torch+nsys")
# torch+nsys: one process under nsys with torch.profiler inside it, at the levels without CUDA
# tracing: nsys and the profiler both trace CUDA through CUPTI, which one process gives to one of them.
BOTH_TOOLS = "torch+nsys"
BOTH_TOOLS_LEVELS = ("M", "ML")
NSYS_2022_NVTX = "0.2.11"  # the last nvtx release whose ranges nsys 2022.4 records
# A command starting with one of these bare names runs under xsp-trace's own interpreter: the
# first `python` on PATH may be another environment, with another copy of xsp_trace or none.
BARE_PYTHONS = ("python", "python3")


@dataclass
class CaptureRequest:
    command: list[str]
    out: Path
    levels: list[str] = field(default_factory=lambda: list(LEVELS))
    batch_sizes: list[int] = field(default_factory=lambda: [1])
    iterations: int = 100  # interleaved pairs; the bootstrap interval narrows as 1/sqrt(n) (BENCHMARKS.md, "One torch-tool capture")
    warmup: int = 10
    tools: list[str] = field(default_factory=lambda: ["torch"])
    depth: int | None = None
    layer_sync: str = "sync"
    metrics: list[str] = field(default_factory=list)  # ncu metric groups, one run each (GPU only)
    metric_iterations: int = 1
    nsys: str | None = None
    ncu: str | None = None
    malloc_tuning: bool = True
    nvtx_ranges: bool = False  # nsys records M and ML as NVTX ranges instead of the capture's own timer
    overwrite: bool = False
    timeout_s: float | None = None


def _check(request: CaptureRequest) -> dict:
    """Validate before running anything; returns tool name -> binary path."""
    if not request.command:
        raise InputError(None, "no command to profile", "put it after --, e.g. xsp-trace capture -- python infer.py")
    bad = [lv for lv in request.levels if lv not in LEVELS]
    if bad or not request.levels:
        raise InputError(None, f"unknown level(s) {', '.join(bad) or '(none)'}", f"use a comma list of {', '.join(LEVELS)}")
    bad = [t for t in request.tools if t not in RUNNER_TOOLS]
    if bad or not request.tools:
        raise InputError(None, f"unknown tool(s) {', '.join(bad) or '(none)'}", f"use {' or '.join(RUNNER_TOOLS)}")
    if not request.batch_sizes or any(b < 1 for b in request.batch_sizes):
        raise InputError(None, "batch sizes must be positive integers", "e.g. --batch-sizes 1,8")
    if request.iterations < 1 or request.warmup < 0 or request.metric_iterations < 1:
        raise InputError(None, "iterations must be >= 1 and warm-up >= 0", "e.g. --iterations 20 --warmup 5")
    if request.layer_sync not in LAYER_SYNC_CHOICES:
        raise InputError(None, f"unknown layer sync {request.layer_sync!r}", f"use one of {', '.join(LAYER_SYNC_CHOICES)}")
    bad = [g for g in request.metrics if g not in tl.NCU_METRIC_GROUPS]
    if bad:
        raise InputError(None, f"unknown metric group(s) {', '.join(bad)}", f"use {', '.join(tl.NCU_METRIC_GROUPS)}")
    out = Path(request.out)
    if out.exists() and not out.is_dir():
        raise InputError(out, "exists and is not a folder", "choose another -o")
    if out.exists() and any(out.iterdir()):
        if not request.overwrite:
            raise InputError(out, "already exists and is not empty", "pass --overwrite to replace it or choose another -o")
        if not is_run_dir(out):
            raise InputError(out, f"is not a capture run directory (no {MANIFEST_NAME}), so --overwrite will not delete it", "choose another -o")
    if not out.parent.exists():
        raise InputError(out, "its folder does not exist", "create the folder or choose another -o")
    binaries = {}
    if BOTH_TOOLS in request.tools:
        bad = [lv for lv in request.levels if lv not in BOTH_TOOLS_LEVELS]
        if bad:
            raise InputError(
                None,
                f"--tool {BOTH_TOOLS} records levels {', '.join(BOTH_TOOLS_LEVELS)}, not {', '.join(bad)}: nsys and torch.profiler cannot both trace CUDA in one process",
                f"capture {', '.join(bad)} with --tool torch or --tool nsys",
            )
        binaries["nsys"] = tl.find_tool("nsys", request.nsys, "NSYS")
        if binaries["nsys"] is None:
            raise InputError(request.nsys or "nsys", "nsys not found", "install Nsight Systems, pass --nsys PATH, or use --tool torch")
    if "nsys" in request.tools and not all(recorded_by_own_timer("nsys", lv, request.nvtx_ranges) for lv in request.levels):
        binaries["nsys"] = tl.find_tool("nsys", request.nsys, "NSYS")
        if binaries["nsys"] is None:
            raise InputError(request.nsys or "nsys", "nsys not found", "install Nsight Systems, pass --nsys PATH, or use --tool torch")
        if "MLG" in request.levels and not tl.gpu_present():
            raise InputError(
                None,
                "level MLG through nsys needs an NVIDIA GPU (nsys --trace=cuda)",
                "on a machine without one, capture MLG with --tool torch (its aten ops stand in for kernels)",
            )
    if request.metrics:
        if "MLG" not in request.levels:
            raise InputError(None, "metric runs attach their kernels to the MLG run of the same batch size", "add MLG to --levels")
        binaries["ncu"] = tl.find_tool("ncu", request.ncu, "NCU")
        if binaries["ncu"] is None:
            raise InputError(request.ncu or "ncu", "ncu not found (metric runs need Nsight Compute)", "install Nsight Compute or pass --ncu PATH")
        if not tl.gpu_present():
            raise InputError(None, "metric runs need an NVIDIA GPU (ncu replays kernels)", "drop --metrics on this machine")
    return binaries


def _plan(request: CaptureRequest) -> list[tuple[str, str, int]]:
    """(tool, level, batch size) of every run, batch size outermost so levels of one size are adjacent."""
    runs = [(t, lv, b) for b in request.batch_sizes for t in request.tools for lv in request.levels]
    runs += [("ncu", f"{METRICS_LEVEL_PREFIX}{g}", b) for b in request.batch_sizes for g in request.metrics]
    return runs


def _environment(request: CaptureRequest, tool: str, level: str, batch_size: int, folder: Path) -> tuple[dict, dict]:
    """(full environment of the launch, the variables the runner set)."""
    metric = level.startswith(METRICS_LEVEL_PREFIX)
    ours = {
        "XSP_LEVEL": level,
        "XSP_TOOL": tool,
        "XSP_BATCH_SIZE": str(batch_size),
        "XSP_ITERATIONS": str(request.metric_iterations if metric else request.iterations),
        "XSP_WARMUP": str(request.warmup),
        "XSP_DEPTH": "" if request.depth is None else str(request.depth),
        "XSP_LAYER_SYNC": request.layer_sync,
        "XSP_OUT": str(folder.resolve()),
        "XSP_OWN_TIMER": "1" if recorded_by_own_timer(tool, level, request.nvtx_ranges) else "0",
    }
    if request.malloc_tuning:
        ours.update({k: v for k, v in MALLOC_TUNING.items() if k not in os.environ})
    if level == "ML" and request.layer_sync == "launch-blocking":
        ours["CUDA_LAUNCH_BLOCKING"] = "1"  # what the XSP authors did for the layer run
    return {**os.environ, **ours}, ours


def _launch_command(request: CaptureRequest, binaries: dict, tool: str, level: str, folder: Path) -> list[str]:
    if recorded_by_own_timer(tool, level, request.nvtx_ranges):
        return list(request.command)  # no profiler: the capture times the ranges itself
    if tool in ("nsys", BOTH_TOOLS):
        return tl.nsys_profile_command(binaries["nsys"], level, folder / "trace", request.command)
    if tool == "ncu":
        group = level[len(METRICS_LEVEL_PREFIX) :]
        return tl.ncu_command(binaries["ncu"], group, folder / "metrics", request.command)
    return list(request.command)


def own_interpreter(command: list[str]) -> list[str]:
    """The command with a bare `python`/`python3` replaced by this interpreter (sys.executable)."""
    if command and command[0] in BARE_PYTHONS and sys.executable:
        return [sys.executable, *command[1:]]
    return list(command)


def other_copy(session: dict) -> str | None:
    """The folder of the xsp_trace package the script imported, when it is not this one's."""
    theirs = session.get("xsp_trace_path")
    if not theirs:
        return None
    return None if Path(theirs).resolve() == _own_package() else theirs


def _own_package() -> Path:
    return Path(sys.modules["xsp_trace"].__file__ or "").resolve().parent


def _warn_other_copy(manifest: dict, session: dict, progress: Callable[[str], None] | None) -> None:
    """Once per capture: the script imported another xsp_trace; through the progress lines, or on
    stderr when they are off (-q)."""
    foreign = other_copy(session)
    if not foreign or any(foreign in w for w in manifest.setdefault("warnings", [])):
        return
    warning = (
        f"the script imported another copy of xsp_trace ({foreign}), not this xsp-trace's ({_own_package()}): "
        "its capture code may differ; run the script with this xsp-trace's python, or install one copy"
    )
    manifest["warnings"].append(warning)
    line = f"xsp-trace: warning: {warning}"
    if progress:
        progress(line)
    else:
        print(line, file=sys.stderr)


def _last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1][:300] if lines else ""


def _collect_trace(request: CaptureRequest, binaries: dict, entry: dict, folder: Path, session: dict) -> tuple[str | None, int | None]:
    """(trace path relative to the run directory, model ranges found in it)."""
    out = Path(request.out)
    timeout = request.timeout_s or 600
    if entry["tool"] == "torch" or recorded_by_own_timer(entry["tool"], entry["level"], request.nvtx_ranges):
        trace = folder / (session.get("trace") or "trace.json")
        if not trace.exists():
            return None, None
        return str(trace.relative_to(out)), trace.read_bytes().count(f'"{MODEL_PREFIX}'.encode())
    if entry["tool"] == BOTH_TOOLS:
        kineto = folder / (session.get("trace") or "trace.json")
        entry["kineto_trace"] = str(kineto.relative_to(out)) if kineto.exists() else None
    if entry["tool"] in ("nsys", BOTH_TOOLS):
        report = tl.finish_nsys_report(binaries["nsys"], folder / "trace", timeout)
        if report is None:
            return None, None
        sqlite = tl.nsys_export_sqlite(binaries["nsys"], report, timeout)
        if sqlite is None:
            return str(report.relative_to(out)), None
        return str(sqlite.relative_to(out)), tl.nvtx_range_count(sqlite, MODEL_PREFIX)
    report = folder / "metrics.ncu-rep"
    if not report.exists():
        return None, None
    tl.ncu_export_csv(binaries["ncu"], report, timeout)
    return str(report.relative_to(out)), None


def _fail(manifest: dict, out: Path, entry: dict, status: str, problem: str, fix: str) -> InputError:
    entry["status"] = status
    entry["message"] = problem
    entry["files"] = list_files(out, entry)
    manifest["status"] = "failed"
    write_json_atomic(out / MANIFEST_NAME, manifest)
    return InputError(out / entry["dir"], f"{problem}; captured so far (kept in {out}): {captured_so_far(manifest)}", fix)


def capture_levels(request: CaptureRequest, progress: Callable[[str], None] | None = None) -> dict:
    """Run every (tool, level, batch size); returns the manifest (also written to OUT/manifest.json)."""
    binaries = _check(request)
    request = dataclasses.replace(request, command=own_interpreter(request.command))
    out = Path(request.out)
    remove_run_dir(out)  # _check allowed it: empty, or a previous run directory with --overwrite
    (out / "runs").mkdir(parents=True, exist_ok=True)
    versions = {name: tl.tool_version(path) for name, path in binaries.items()}
    if "torch" in request.tools or BOTH_TOOLS in request.tools:
        versions["torch.profiler"] = None  # filled from the sessions (torch version)
    manifest = new_manifest(
        command=request.command,
        levels=request.levels,
        batch_sizes=request.batch_sizes,
        iterations=request.iterations,
        warmup=request.warmup,
        tools=versions,
        options={
            "tools": request.tools,
            "depth": request.depth,
            "layer_sync": request.layer_sync,
            "metrics": request.metrics,
            "metric_iterations": request.metric_iterations,
            "malloc_tuning": request.malloc_tuning,
            "nvtx_ranges": request.nvtx_ranges,
            "nsys_trace": {lv: tl.NSYS_TRACE[lv] for lv in request.levels if not recorded_by_own_timer("nsys", lv, request.nvtx_ranges)},
        },
        env={},
    )
    plan = _plan(request)
    for number, (tool, level, batch_size) in enumerate(plan, 1):
        entry = run_entry(tool, level, batch_size)
        manifest["runs"].append(entry)
        folder = out / entry["dir"]
        folder.mkdir(parents=True, exist_ok=True)
        env, ours = _environment(request, tool, level, batch_size, folder)
        manifest["env"] = {k: v for k, v in ours.items() if not k.startswith("XSP_")}
        write_json_atomic(out / MANIFEST_NAME, manifest)
        command = _launch_command(request, binaries, tool, level, folder)
        if progress:
            progress(f"[{number}/{len(plan)}] {tool} {level} batch {batch_size}")
        started = time.perf_counter()
        try:
            with open(folder / "stdout.txt", "wb") as stdout, open(folder / "stderr.txt", "wb") as stderr:
                done = subprocess.run(command, env=env, stdout=stdout, stderr=stderr, timeout=request.timeout_s)
        except FileNotFoundError:
            raise _fail(manifest, out, entry, "failed", f"cannot start {command[0]!r}", "check the command after --") from None
        except subprocess.TimeoutExpired:
            raise _fail(
                manifest, out, entry, "failed", f"the command ran past {request.timeout_s} s", "raise --timeout or lower --iterations"
            ) from None
        except KeyboardInterrupt:
            _fail(manifest, out, entry, "failed", "interrupted", "")
            raise
        entry["wall_s"] = round(time.perf_counter() - started, 3)
        entry["returncode"] = done.returncode
        if done.returncode != 0:
            tail = _last_line(folder / "stderr.txt")
            raise _fail(
                manifest,
                out,
                entry,
                "failed",
                f"the command failed (exit {done.returncode}) in run {entry['key']}" + (f": {tail}" if tail else ""),
                f"see {entry['dir']}/stderr.txt",
            )
        session_path = folder / SESSION_NAME
        if not session_path.exists():
            raise _fail(
                manifest,
                out,
                entry,
                "failed",
                f"no model found: the command ran but never called xsp_trace.capture.run(model, make_input) in run {entry['key']}",
                "call it from the script (see xsp-trace capture --help)",
            )
        session = read_session(session_path)
        entry["session"] = str(session_path.relative_to(out))
        absorb_session(manifest, session)
        _warn_other_copy(manifest, session, progress)
        entry["trace"], entry["model_ranges"] = _collect_trace(request, binaries, entry, folder, session)
        if entry["trace"] is None or (tool == BOTH_TOOLS and entry.get("kineto_trace") is None):
            raise _fail(manifest, out, entry, "empty", f"{tool} wrote no trace in run {entry['key']}", f"see {entry['dir']}/stderr.txt")
        if entry["model_ranges"] == 0:
            fix = "check that the script's model ran inside xsp_trace.capture.run"
            nvtx = tool in ("nsys", BOTH_TOOLS) and not recorded_by_own_timer(tool, level, request.nvtx_ranges)
            if nvtx and session.get("nvtx_version") != NSYS_2022_NVTX:
                fix = (
                    f"the nvtx package {session.get('nvtx_version')} records nothing under nsys "
                    f"{versions.get('nsys')}: pip install 'nvtx=={NSYS_2022_NVTX}'"
                )
            elif nvtx:
                fix = "the NVTX ranges did not reach nsys: check NVTX_INJECTION64_PATH in the script's environment"
            raise _fail(manifest, out, entry, "empty", f"the trace of run {entry['key']} holds no model range", fix)
        finish_run(manifest, out, entry)
    return finish_capture(manifest, out)
