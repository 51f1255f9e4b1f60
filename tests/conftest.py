"""Shared test fixtures: test data paths, converted databases, and NVIDIA's own `nsys stats`."""

from __future__ import annotations

import csv
import shutil
import subprocess
from pathlib import Path

import duckdb
import pytest
import typer.testing

DATA = Path(__file__).parent / "data"

NSYS_EXPORTS = {
    "nsys_2022_saxpy_mpi_a100": DATA / "nsys_2022_saxpy_mpi_a100" / "pipit_saxpy_mpi_cuda_nsys2022.2.sqlite",
    "nsys_2026_pytorch_2xh100": DATA / "nsys_2026_pytorch_2xh100" / "nsysai_h100_2gpu_1s_nsys2026.2.sqlite",
    "nsys_2026_mock_rtx3080": DATA / "nsys_2026_mock_rtx3080" / "nsysai_mock_nsys2026.1.sqlite",
}
NEWER_NSYS_REPORT = DATA / "nsys_report_from_newer_nsys" / "cs336_myrun_nsys2026.1.nsys-rep"


def nsys_version() -> str:
    """Version of the installed nsys, e.g. 2022.4.2."""
    out = subprocess.run([require_nsys(), "--version"], check=True, capture_output=True, text=True).stdout
    return out.strip().split()[-1].split("-")[0]


def require_nsys() -> str:
    nsys = shutil.which("nsys")
    if nsys is None:
        pytest.fail("nsys is not installed: .ci/run installs Debian's nsight-systems; these tests compare with it")
    return nsys


def nsys_stats(source: Path, report: str, workdir: Path, fmt: str = "csv") -> list[dict]:
    """Rows of `nsys stats --report REPORT --format FMT` (csv, or csv:<units>) on a copy of `source`."""
    nsys = require_nsys()
    workdir.mkdir(parents=True, exist_ok=True)
    copy = workdir / source.name
    if not copy.exists():
        shutil.copyfile(source, copy)
    prefix = workdir / f"ref_{report.replace(':', '_')}_{fmt.replace(':', '_').replace('=', '_')}"
    subprocess.run(
        [nsys, "stats", "--report", report, "--format", fmt, "--force-export", "false", "--output", str(prefix), str(copy)],
        check=True,
        capture_output=True,
        text=True,
    )
    out = Path(f"{prefix}_{report.split(':')[0]}.csv")
    if not out.exists():  # nsys writes nothing when the report has no data
        return []
    with open(out, newline="") as f:
        return list(csv.DictReader(f))


def without_backtrace_rows(source: Path, workdir: Path) -> Path:
    """A copy of an nsys export without its eventClass 67 (CUDA backtrace) runtime rows: they repeat
    runtime calls (same correlationId), which nsys's reports count twice and the converter once."""
    import sqlite3

    from xsp_trace.formats import nsys_export as fmt

    copy = workdir / "no_backtrace" / source.name
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, copy)
    with sqlite3.connect(copy) as raw:
        cols = [r[1] for r in raw.execute(f"PRAGMA table_info({fmt.RUNTIME})")]
        if "eventClass" in cols:
            raw.execute(f"DELETE FROM {fmt.RUNTIME} WHERE eventClass = ?", [fmt.ApiEventClass.CUDA_BACKTRACE])
    return copy


def _built_once(get_command):
    """typer.testing's get_command, remembering each app's command: typer builds the whole click
    command tree (evaluating every option's annotations) at each CliRunner.invoke, ~0.3 s each time."""
    built: dict[int, tuple[object, object]] = {}

    def get(app):
        if id(app) not in built:
            built[id(app)] = (app, get_command(app))  # the app is kept, so its id is not reused
        return built[id(app)][1]

    return get


typer.testing._get_command = _built_once(typer.testing._get_command)


# Fixtures that convert real traces: a test using one is in the slow tier (pyproject.toml's markers).
SLOW_FIXTURES = frozenset({"converted", "converted_path"})


def pytest_collection_modifyitems(config, items):
    """Mark slow every test that converts real traces through the fixtures below; modules whose
    every test is slow for another reason say so with `pytestmark = pytest.mark.slow`."""
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def pytest_sessionfinish(session, exitstatus):
    """With XSP_REPORT_UNIMPORTED=1: name the modules of xsp_trace/ and capture/ that no test of
    this session imported (the fast tier, `-m "not slow"`, is meant to import every one)."""
    import os
    import sys

    if not os.environ.get("XSP_REPORT_UNIMPORTED"):
        return
    package = Path(__file__).resolve().parent.parent / "xsp_trace"
    names = set()
    for folder, _, files in os.walk(package, followlinks=True):
        for name in files:
            if name.endswith(".py"):
                parts = Path(folder, name).relative_to(package.parent).with_suffix("").parts
                names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    missing = sorted(names - set(sys.modules))
    print(f"\nmodules of the package no test imported: {missing or 'none'}")


@pytest.fixture(scope="session")
def converted_path(tmp_path_factory):
    """converted_path(path, ...) -> the DuckDB database converted from the traces (cached per session)."""
    from xsp_trace.convert import ConvertOptions, convert_files

    cache: dict[tuple[Path, ...], Path] = {}

    def _path(*paths: Path) -> Path:
        key = tuple(paths)
        if key not in cache:
            out = tmp_path_factory.mktemp("db") / "out.duckdb"
            convert_files(list(paths), out, ConvertOptions())
            cache[key] = out
        return cache[key]

    return _path


@pytest.fixture(scope="session")
def converted(converted_path):
    """converted(path, ...) -> read-only DuckDB connection to the database converted_path gives."""

    def _convert(*paths: Path) -> duckdb.DuckDBPyConnection:
        return duckdb.connect(str(converted_path(*paths)), read_only=True)

    return _convert
