"""A capture run directory (xsp-trace capture) into the unified schema.

Reads RUN_DIR/manifest.json, converts the trace of every run that finished (status ok) with its
level, model and batch size on the runs row, then adds what the session records say:
capture_runs (how it was measured), capture_latencies (plain-timer loop latencies) and layers
(layer metadata). Failed runs of an interrupted capture are skipped. Metric runs (ncu) have no
timeline: their launches are matched to the kernels of the MLG run of the same batch size
(xsp_trace/convert/ncu.py) and stored in `metrics` under that run's id.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import duckdb
import pyarrow as pa

from ..capture.manifest import MANIFEST_FORMAT, MANIFEST_NAME, METRICS_LEVEL_PREFIX
from ..errors import InputError
from ..store.database import insert_relation
from .common import ConvertOptions, Progress
from .dispatch import convert_trace


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, f"{what} is missing", "pass a run directory written by xsp-trace capture") from None
    except (OSError, ValueError) as exc:
        raise InputError(path, f"{what} is not readable JSON ({exc})", "re-run xsp-trace capture") from None


def read_run_manifest(run_dir: Path) -> dict:
    path = run_dir / MANIFEST_NAME
    if not path.exists():
        raise InputError(
            run_dir,
            f"is a folder without {MANIFEST_NAME}, not a capture run directory",
            "pass a run directory written by xsp-trace capture, or the trace files themselves",
        )
    manifest = _read_json(path, "the run manifest")
    if manifest.get("format") != MANIFEST_FORMAT:
        raise InputError(
            path, f"is not an xsp-trace capture manifest (format {manifest.get('format')!r})", "pass a run directory written by xsp-trace capture"
        )
    return manifest


def _capture_row(run_id: int, run_dir: Path, entry: dict, session: dict) -> dict:
    change = session.get("program_change") or {}
    device = session.get("device") or {}
    faults = session.get("minor_faults") or {}
    return {
        "run_id": run_id,
        "run_dir": str(run_dir),
        "run_key": entry["key"],
        "tool": entry["tool"],
        "level": entry["level"],
        "batch_size": entry["batch_size"],
        "iterations": session.get("iterations"),
        "warmup": session.get("warmup"),
        "depth": session.get("depth"),
        "layer_sync": session.get("layer_sync"),
        "device": device.get("name") or device.get("type"),
        "threads": session.get("threads"),
        "torch_version": session.get("torch_version"),
        "nvtx_version": session.get("nvtx_version"),
        "profiler_scope": session.get("profiler_scope"),
        "program_changed": change.get("changed") if session.get("program_change") is not None else None,
        "program_change_note": _change_note(change),
        "minor_faults_uninstrumented": faults.get("uninstrumented"),
        "minor_faults_instrumented": faults.get("instrumented"),
        "wall_s": entry.get("wall_s"),
    }


def _change_note(change: dict) -> str | None:
    if not change.get("changed"):
        return None
    parts = [change.get("note") or "layer hooks change the ops the model runs"]
    if change.get("ops_without_hooks_only"):
        parts.append("lost: " + json.dumps(change["ops_without_hooks_only"]))
    if change.get("ops_with_hooks_only"):
        parts.append("added: " + json.dumps(change["ops_with_hooks_only"]))
    return "; ".join(parts)


def _latency_rows(run_id: int, session: dict) -> dict:
    lat = session["latencies_ns"]
    plain, phases, instrumented = lat["uninstrumented"], lat["uninstrumented_phase"], lat["instrumented"]
    return {
        "run_id": [run_id] * (len(plain) + len(instrumented)),
        "loop": ["uninstrumented"] * len(plain) + ["instrumented"] * len(instrumented),
        "iteration": list(range(len(plain))) + list(range(len(instrumented))),
        "phase": list(phases) + ["during"] * len(instrumented),
        "latency_ns": list(plain) + list(instrumented),
    }


def _layer_rows(run_id: int, session: dict) -> dict:
    layers = session.get("layers") or []
    dump = lambda v: None if v is None else json.dumps(v)  # noqa: E731
    return {
        "run_id": [run_id] * len(layers),
        "model": [session.get("model")] * len(layers),
        "layer_index": [layer["index"] for layer in layers],
        "name": [layer["name"] for layer in layers],
        "type": [layer["type"] for layer in layers],
        "depth": [layer.get("depth") for layer in layers],
        "range_name": [layer.get("range_name") for layer in layers],
        "input_shapes": [dump(layer.get("input_shapes")) for layer in layers],
        "output_shapes": [dump(layer.get("output_shapes")) for layer in layers],
        "parameter_bytes": [layer.get("parameter_bytes") for layer in layers],
        "buffer_bytes": [layer.get("buffer_bytes") for layer in layers],
        "calls_per_inference": [layer.get("calls_per_inference") for layer in layers],
    }


_LATENCY_SCHEMA = pa.schema(
    [("run_id", pa.int32()), ("loop", pa.string()), ("iteration", pa.int32()), ("phase", pa.string()), ("latency_ns", pa.int64())]
)


def convert_run_dir(con: duckdb.DuckDBPyConnection, run_dir: Path, options: ConvertOptions, progress: Progress) -> list[int]:
    """Convert every finished run of a capture run directory; returns the run ids added."""
    run_dir = Path(run_dir)
    manifest = read_run_manifest(run_dir)
    runs = [r for r in manifest.get("runs", []) if r.get("status") == "ok" and r.get("trace")]
    convertible = [r for r in runs if not r["level"].startswith(METRICS_LEVEL_PREFIX)]
    if not convertible:
        raise InputError(
            run_dir, "holds no finished run to convert (see the status of each run in manifest.json)", "capture again with xsp-trace capture"
        )
    model = (manifest.get("model") or {}).get("name")
    added: list[int] = []
    targets: dict = {}  # (level, batch size) -> [(tool, run_id)]
    for number, entry in enumerate(convertible, 1):
        progress(f"{entry['key']} ({number}/{len(convertible)})", None)
        session = _read_json(run_dir / entry["session"], "the session record")
        fields = {**options.run_fields, "level": entry["level"], "model": session.get("model") or model, "batch_size": entry["batch_size"]}
        run_options = replace(options, run_fields=fields, include_os_runtime=False)
        if entry.get("kineto_trace"):  # capture --tool torch+nsys: one process, both profilers, one run
            from .one_execution import convert_one_execution

            run_ids = convert_one_execution(con, run_dir / entry["trace"], run_dir / entry["kineto_trace"], run_options, progress)
        else:
            run_ids = convert_trace(con, run_dir / entry["trace"], run_options, progress)
        for run_id in run_ids:
            con.execute(
                "INSERT INTO capture_runs BY NAME SELECT * FROM (SELECT "
                + ", ".join(f"? AS {k}" for k in _capture_row(run_id, run_dir, entry, session))
                + ")",
                list(_capture_row(run_id, run_dir, entry, session).values()),
            )
            insert_relation(con, "capture_latencies", pa.table(_latency_rows(run_id, session), schema=_LATENCY_SCHEMA))
            layers = _layer_rows(run_id, session)
            if layers["layer_index"]:
                insert_relation(con, "layers", pa.table(layers))
        added.extend(run_ids)
        targets.setdefault((entry["level"], entry["batch_size"]), []).append((entry["tool"], run_ids[0]))
    for entry in runs:
        if entry["level"].startswith(METRICS_LEVEL_PREFIX):
            progress(f"{entry['key']} (metrics)", None)
            _import_metrics(con, run_dir, entry, targets)
    return added


def _import_metrics(con, run_dir: Path, entry: dict, targets: dict) -> None:
    """An ncu metric run's launches matched to the kernels of the MLG run of its batch size."""
    from .ncu import import_ncu_metrics

    candidates = sorted(targets.get(("MLG", entry["batch_size"]), []), key=lambda t: t[0] != "nsys")  # nsys first
    if not candidates:
        raise InputError(
            run_dir / entry["dir"],
            f"metric run {entry['key']} has no finished MLG run of batch size {entry['batch_size']} to attach its kernels to",
            "capture MLG together with --metrics",
        )
    report = run_dir / entry["trace"]
    csv = report.with_suffix(".csv")
    import_ncu_metrics(con, csv if csv.exists() else report, candidates[0][1])  # a .ncu-rep needs ncu on PATH
