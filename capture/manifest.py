"""The run directory of a leveled capture and its manifest (plain JSON, no torch needed).

    RUN_DIR/manifest.json                 what was captured: levels, tools and versions, device,
                                          batch sizes, iterations, the command, one entry per run
    RUN_DIR/runs/<tool>-<level>-bs<N>/    one profiled process per (tool, level, batch size):
        session.json                      written by the script side (xsp_trace.capture.run):
                                          layers, plain-timer loop latencies, program change
        trace.json | trace.nsys-rep + trace.sqlite | metrics.ncu-rep + metrics.csv
        stdout.txt, stderr.txt            the script's output (runner only)

`xsp-trace convert RUN_DIR` reads the manifest and converts each run's trace.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from datetime import datetime, timezone
from pathlib import Path

from xsp_trace.vocabulary import LEVELS as LEVELS  # re-exported: the capture side's levels

MANIFEST_NAME = "manifest.json"
SESSION_NAME = "session.json"
MANIFEST_FORMAT = "xsp-capture-run"
SESSION_FORMAT = "xsp-capture-session"
FORMAT_VERSION = 1

# Metric runs are named "metrics:<group>" (one ncu metric group per run).
METRICS_LEVEL_PREFIX = "metrics:"


# Levels recorded by the capture's own timer (perf_counter_ns around each range, written as a
# Kineto-format trace.json): no profiler and no NVTX, so M costs no more than the plain inference.
# nsys records them only when asked (--nvtx-ranges): one NVTX push/pop recorded by nsys 2022.4
# costs more than the whole M-level budget (BENCHMARKS.md, "M and ML level cost").
OWN_TIMER_LEVELS = ("M", "ML")


def recorded_by_own_timer(tool: str, level: str, nvtx_ranges: bool = False) -> bool:
    """Whether the (tool, level) run's ranges come from the capture's own timer rather than a profiler."""
    return level in OWN_TIMER_LEVELS and (tool == "torch" or (tool == "nsys" and not nvtx_ranges))


def level_has_layers(level: str) -> bool:
    return level in ("ML", "MLG") or level.startswith(METRICS_LEVEL_PREFIX)


def run_key(tool: str, level: str, batch_size: int) -> str:
    """Folder name of one run: <tool>-<level>-bs<N>, with ':' of metric levels as '-'."""
    return f"{tool}-{level.replace(':', '-')}-bs{batch_size}"


def write_json_atomic(path: Path, data) -> None:
    """Write JSON to a temporary file and rename it over `path` (readers never see half a file)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str) + "\n")
    os.replace(tmp, path)


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def host_facts() -> dict:
    return {
        "host": socket.gethostname(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }


def new_manifest(*, command, levels, batch_sizes, iterations, warmup, tools, options: dict, env: dict) -> dict:
    return {
        "format": MANIFEST_FORMAT,
        "version": FORMAT_VERSION,
        "created_at": utc_now(),
        "command": list(command) if command is not None else None,
        "cwd": os.getcwd(),
        "levels": list(levels),
        "batch_sizes": list(batch_sizes),
        "iterations": iterations,
        "warmup": warmup,
        "tools": tools,  # tool name -> version string (None when unknown)
        "options": options,
        "env": env,  # environment variables the runner set for the profiled processes
        "host": host_facts(),
        "model": None,  # filled from the first session: name, type, device
        "device": None,
        "status": "running",
        "runs": [],
    }


def is_run_dir(path: Path) -> bool:
    return (Path(path) / MANIFEST_NAME).is_file()


def remove_run_dir(path: Path) -> None:
    """Delete a previous run directory (--overwrite); refuses folders that are not one."""
    import shutil

    path = Path(path)
    if not path.exists() or not any(path.iterdir()):
        return
    if not is_run_dir(path):
        raise FileExistsError(f"{path} is not an xsp-trace run directory (no {MANIFEST_NAME}); not deleting it")
    shutil.rmtree(path)


def read_manifest(run_dir: Path) -> dict:
    return json.loads((Path(run_dir) / MANIFEST_NAME).read_text())


def read_session(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def run_entry(tool: str, level: str, batch_size: int) -> dict:
    key = run_key(tool, level, batch_size)
    return {
        "key": key,
        "tool": tool,
        "level": level,
        "batch_size": batch_size,
        "dir": f"runs/{key}",
        "status": "running",  # ok | failed | empty | running
        "trace": None,  # path of the trace to convert, relative to the run directory
        "files": [],  # every file the run left, relative to the run directory
        "session": None,
        "model_ranges": None,  # model range names found in the trace (0: an empty run; a GPU Kineto trace mirrors each on the GPU timeline)
        "returncode": None,
        "wall_s": None,
        "message": None,
    }


def absorb_session(manifest: dict, session: dict) -> None:
    """Copy model, device and library versions of a session into the manifest (first one wins)."""
    if manifest.get("model") is None:
        manifest["model"] = {"name": session["model"], "type": session["model_type"], "training": session["training"]}
    if manifest.get("device") is None:
        manifest["device"] = session["device"]
    tools = manifest.setdefault("tools", {})
    tools.setdefault("torch", session.get("torch_version"))
    if session.get("nvtx_version"):
        tools.setdefault("nvtx", session["nvtx_version"])


def list_files(run_dir: Path, entry: dict) -> list[str]:
    folder = Path(run_dir) / entry["dir"]
    return sorted(str(p.relative_to(run_dir)) for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def finish_run(manifest: dict, run_dir: Path, entry: dict) -> None:
    """Mark one run captured, list its files and save the manifest (what survives a later failure)."""
    entry["status"] = "ok"
    entry["files"] = list_files(run_dir, entry)
    write_json_atomic(Path(run_dir) / MANIFEST_NAME, manifest)


def finish_capture(manifest: dict, run_dir: Path) -> dict:
    manifest["status"] = "complete"
    write_json_atomic(Path(run_dir) / MANIFEST_NAME, manifest)
    return manifest


def captured_so_far(manifest: dict) -> str:
    done = [r["key"] for r in manifest["runs"] if r["status"] == "ok"]
    return ", ".join(done) if done else "nothing"
