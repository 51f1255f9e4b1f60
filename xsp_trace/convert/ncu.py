"""Nsight Compute metrics (ncu CSV, or .ncu-rep through `ncu --import`) into the `metrics` table.

ncu replays kernels, so its metric runs have no timeline: each profiled launch is matched to a
kernel span of a traced run (normally the MLG run of the same model and batch size) by kernel
name and occurrence order -- the k-th launch of kernel X that ncu profiled is the k-th launch of
X inside the target run's inferences (model ranges; the whole run when it has none), in start
order. Rows are stored as ncu names them (values in base units) plus the derived xsp.* metrics
the analyses read (FLOPs, DRAM bytes, achieved occupancy; xsp_trace/formats/ncu_metrics.py).
"""

from __future__ import annotations

import csv
import io
import re
import shutil
import subprocess
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pyarrow as pa

from ..errors import InputError
from ..formats import ncu_metrics as nm
from ..store.database import insert_relation
from ..store.sql import scalar


@dataclass
class NcuLaunch:
    """One profiled kernel launch: its ncu ID, kernel name, and metrics {name: (value, base unit)}."""

    launch_id: int
    kernel_name: str
    metrics: dict[str, tuple[float, str]] = field(default_factory=dict)


@dataclass
class MetricsImport:
    run_id: int
    launches: int
    matched: int
    name_column: str
    unmatched_names: list[str]


def _number(text: str) -> float | None:
    text = (text or "").strip().replace(",", "")
    if text in ("", "n/a", "N/A", "-"):
        return None
    try:
        return float(text)
    except ValueError:
        return None


def to_base_unit(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) in the unit xsp-trace stores: ns for times, unscaled bytes/instructions/..."""
    unit = (unit or "").strip()
    if unit in nm.TIME_UNITS_TO_NS:
        return value * nm.TIME_UNITS_TO_NS[unit], "nsecond"
    for base in nm.BASE_UNITS:
        for suffix in (base, base + "/second", base + "/s"):
            if unit.endswith(suffix) and unit[: -len(suffix)] in nm.UNIT_PREFIXES:
                return value * nm.UNIT_PREFIXES[unit[: -len(suffix)]], suffix
    return value, unit


def _csv_rows(text: str, path: Path) -> list[list[str]]:
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if line.startswith(f'"{nm.ID_COLUMN}",') or line.startswith(f"{nm.ID_COLUMN},"):
            return list(csv.reader(io.StringIO("\n".join(lines[start:]))))
    raise InputError(
        path, 'has no ncu CSV header (a line starting with "ID",)', "write it with: ncu --import REPORT.ncu-rep --csv --page raw > metrics.csv"
    )


def parse_ncu_csv(text: str, path: Path) -> list[NcuLaunch]:
    """The launches of an ncu CSV, raw page (wide, units row) or details page (long)."""
    rows = _csv_rows(text, path)
    header = rows[0]
    if nm.KERNEL_NAME_COLUMN not in header:
        raise InputError(path, f'has no "{nm.KERNEL_NAME_COLUMN}" column', "export it with ncu --csv --page raw")
    col = {name: i for i, name in enumerate(header)}
    launches: dict[int, NcuLaunch] = {}
    if nm.DETAILS_METRIC_NAME in col:  # long form: one row per (launch, metric)
        for row in rows[1:]:
            if len(row) < len(header):
                continue
            launch_number = _number(row[col[nm.ID_COLUMN]])
            value = _number(row[col[nm.DETAILS_METRIC_VALUE]])
            if launch_number is None or value is None or not row[col[nm.DETAILS_METRIC_NAME]]:
                continue
            launch_id = int(launch_number)
            launch = launches.setdefault(launch_id, NcuLaunch(launch_id, row[col[nm.KERNEL_NAME_COLUMN]]))
            launch.metrics[row[col[nm.DETAILS_METRIC_NAME]]] = to_base_unit(value, row[col[nm.DETAILS_METRIC_UNIT]])
        return sorted(launches.values(), key=lambda launch: launch.launch_id)
    metric_columns = [i for i, name in enumerate(header) if name not in nm.IDENTIFICATION_COLUMNS]
    units = [""] * len(header)
    for row in rows[1:]:
        if len(row) < len(header):
            continue
        launch_number = _number(row[col[nm.ID_COLUMN]])
        if launch_number is None:  # the units row of the raw page
            units = row
            continue
        launch = NcuLaunch(int(launch_number), row[col[nm.KERNEL_NAME_COLUMN]])
        for i in metric_columns:
            value = _number(row[i])
            if value is not None:
                launch.metrics[header[i]] = to_base_unit(value, units[i])
        launches[launch.launch_id] = launch
    return sorted(launches.values(), key=lambda launch: launch.launch_id)


def derived_metrics(metrics: dict[str, tuple[float, str]]) -> dict[str, tuple[float, str]]:
    """The xsp.* metrics of one launch, from whichever raw metrics it has."""
    out: dict[str, tuple[float, str]] = {}
    flops = [metrics[m][0] * w for m, w in nm.FLOP_COUNTERS.items() if m in metrics]
    if flops:
        out[nm.FLOPS] = (sum(flops), "flop")
    for derived, names in ((nm.DRAM_READ_BYTES, nm.DRAM_READ_METRICS), (nm.DRAM_WRITE_BYTES, nm.DRAM_WRITE_METRICS)):
        found = [metrics[m][0] for m in names if m in metrics]
        if found:
            out[derived] = (found[0], "byte")
    occupancy = [metrics[m][0] * f for m, f in nm.OCCUPANCY_METRICS.items() if m in metrics]
    if occupancy:
        out[nm.ACHIEVED_OCCUPANCY] = (occupancy[0], "fraction")
    return out


def read_ncu_file(path: Path, ncu: str | None = None) -> str:
    """CSV text of an ncu CSV file or of an .ncu-rep (exported with the ncu on PATH / given)."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "does not exist", "check the path")
    if path.suffix == ".ncu-rep":
        binary = ncu or shutil.which("ncu")
        if binary is None:
            raise InputError(
                path,
                "is an Nsight Compute report and ncu is not installed",
                "export it where ncu is: ncu --import REPORT.ncu-rep --csv --page raw > metrics.csv",
            )
        done = subprocess.run([binary, "--import", str(path), "--csv", "--page", "raw"], capture_output=True, text=True)
        if done.returncode != 0:
            raise InputError(path, f"ncu --import failed: {done.stderr.strip().splitlines()[-1:]}", "check the report")
        return done.stdout
    return path.read_text(errors="replace")


_NAME_COLUMNS = {"name": "s.name", "short_name": "k.short_name", "mangled_name": "k.mangled_name"}


def _base_name(name: str | None) -> str | None:
    """Kernel name without return type, template arguments and parameters (for loose matching)."""
    if not name:
        return None
    name = re.sub(r"^void\s+", "", name.strip())
    depth, out = 0, []
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif ch == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(ch)
    return "".join(out).strip() or None


def _target_kernels(con: duckdb.DuckDBPyConnection, run_id: int) -> list[tuple]:
    in_inferences = scalar(con, "SELECT count(*) > 0 FROM spans WHERE run_id = ? AND kind = 'model'", [run_id])
    cols = ", ".join(f"{sql} AS {alias}" for alias, sql in _NAME_COLUMNS.items())
    return con.execute(
        f"""SELECT s.span_id, {cols} FROM spans s LEFT JOIN kernels k USING (run_id, span_id)
            WHERE s.run_id = ? AND s.kind = 'kernel' {"AND s.iteration IS NOT NULL" if in_inferences else ""}
            ORDER BY s.start_ns, s.span_id""",
        [run_id],
    ).fetchall()


def match_launches(launches: list[NcuLaunch], kernels: list[tuple]) -> tuple[str, dict[int, int]]:
    """(name column used, {launch_id: span_id}) by kernel name and occurrence order."""
    best: tuple[str, dict[int, int]] = ("name", {})
    keys = list(_NAME_COLUMNS) + ["base_name"]
    for i, key in enumerate(keys):
        by_name: dict[str, list[int]] = defaultdict(list)
        for row in kernels:
            name = _base_name(row[1]) if key == "base_name" else row[1 + i]
            if name:
                by_name[name].append(row[0])
        seen: dict[str, int] = defaultdict(int)
        matched: dict[int, int] = {}
        for launch in launches:
            name = _base_name(launch.kernel_name) if key == "base_name" else launch.kernel_name
            if not name:  # matches nothing: by_name holds no empty name
                continue
            spans = by_name.get(name, [])
            if seen[name] < len(spans):
                matched[launch.launch_id] = spans[seen[name]]
            seen[name] += 1
        if len(matched) > len(best[1]):
            best = (key, matched)
    return best


def default_target_run(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    runs = con.execute("SELECT run_id FROM runs WHERE level = 'MLG' ORDER BY run_id").fetchall()
    if len(runs) != 1:
        runs = con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()
    if len(runs) != 1:
        raise InputError(path, "could belong to several runs of the database", "pass --run RUN_ID (its MLG run)")
    return runs[0][0]


def import_ncu_metrics(con: duckdb.DuckDBPyConnection, path: Path, run_id: int | None = None, ncu: str | None = None) -> MetricsImport:
    """Match an ncu CSV/report to the kernels of `run_id` and append metrics rows."""
    path = Path(path)
    launches = parse_ncu_csv(read_ncu_file(path, ncu), path)
    if not launches:
        raise InputError(path, "holds no profiled kernel launch", "profile with ncu --metrics ... first")
    if run_id is None:
        run_id = default_target_run(con, path)
    if scalar(con, "SELECT count(*) FROM runs WHERE run_id = ?", [run_id]) == 0:
        raise InputError(path, f"cannot be matched: the database has no run {run_id}", "pass --run with an existing run id")
    name_column, matched = match_launches(launches, _target_kernels(con, run_id))
    if not matched:
        raise InputError(path, f"matches no kernel of run {run_id} by name", "pass --run with the traced run of the same model and batch size")
    rows: dict[str, list] = {"run_id": [], "span_id": [], "metric": [], "value": [], "unit": []}
    for launch in launches:
        span_id = matched.get(launch.launch_id)
        if span_id is None:
            continue
        for metric, (value, unit) in {**launch.metrics, **derived_metrics(launch.metrics)}.items():
            rows["run_id"].append(run_id)
            rows["span_id"].append(span_id)
            rows["metric"].append(metric)
            rows["value"].append(value)
            rows["unit"].append(unit)
    table = pa.table(
        rows,
        schema=pa.schema([("run_id", pa.int32()), ("span_id", pa.int64()), ("metric", pa.string()), ("value", pa.float64()), ("unit", pa.string())]),
    )
    insert_relation(con, "metrics", table)
    unmatched = sorted({launch.kernel_name for launch in launches if launch.launch_id not in matched})
    return MetricsImport(run_id, len(launches), len(matched), name_column, unmatched)
