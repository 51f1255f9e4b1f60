"""The wheel works in a clean virtual environment with its declared dependencies only: convert,
analyze and perfetto on a real export, and (with the `capture` extra, torch pinned to the CPU
build) a leveled capture converted and analysed -- no file of the checkout present.

`pip install xsp-trace` must pull everything `xsp-trace convert` imports (numpy was once imported
but not declared, and a --no-deps install could not see it). The venv has no system site
packages and no checkout on its path; the convert runs from a temporary folder holding only a
copy of a real nsys export, and the kernel count is compared with the export's own kernel table.
About a minute (pip copies the dependency wheels from the local index/cache).
"""

from __future__ import annotations

import csv
import io
import os
import shutil
import sqlite3
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import NSYS_EXPORTS

pytestmark = pytest.mark.slow  # wheels and virtual environments

ROOT = Path(__file__).parent.parent
FIXTURE = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(python, xsp-trace, env, wheel) of a fresh venv with the wheel and its declared dependencies."""
    tmp_path = tmp_path_factory.mktemp("clean")
    wheels = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(wheels), str(ROOT)], check=True, capture_output=True, text=True
    )
    (wheel,) = wheels.glob("xsp_trace-*.whl")
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True, system_site_packages=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    clean_env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    install = subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], capture_output=True, text=True, env=clean_env, timeout=600)
    assert install.returncode == 0, install.stdout + install.stderr
    return python, env_dir / "bin" / "xsp-trace", clean_env, wheel


def test_wheel_in_clean_venv_converts(installed, tmp_path):
    python, xsp, clean_env, _ = installed
    env_dir = python.parent.parent
    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(FIXTURE, work / "trace.sqlite")
    convert = subprocess.run(
        [str(xsp), "convert", "trace.sqlite", "-o", "out.duckdb", "-q"],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=work,
        timeout=300,
    )
    assert convert.returncode == 0, convert.stdout + convert.stderr
    where = subprocess.run(
        [str(python), "-c", "import xsp_trace; print(xsp_trace.__file__)"], capture_output=True, text=True, env=clean_env, cwd=work, check=True
    ).stdout.strip()
    assert where.startswith(str(env_dir)), where  # the installed copy, not the checkout
    count = subprocess.run(
        [
            str(python),
            "-c",
            "import duckdb; print(duckdb.connect('out.duckdb', read_only=True)"
            ".execute(\"select count(*) from spans where kind = 'kernel'\").fetchone()[0])",
        ],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=work,
        check=True,
    ).stdout.strip()
    with sqlite3.connect(FIXTURE) as ref:
        kernels = ref.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert int(count) == kernels > 0
    analyze = subprocess.run(
        [str(xsp), "analyze", "out.duckdb", "-a", "top_kernels", "--format", "csv"],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=work,
        timeout=300,
    )
    assert analyze.returncode == 0, analyze.stdout + analyze.stderr
    instances = sum(int(row["instances"]) for row in csv.DictReader(io.StringIO(analyze.stdout)))
    assert instances == kernels
    perfetto = subprocess.run(
        [str(xsp), "perfetto", "out.duckdb", "-o", "out.pftrace"], capture_output=True, text=True, env=clean_env, cwd=work, timeout=300
    )
    assert perfetto.returncode == 0, perfetto.stdout + perfetto.stderr
    assert (work / "out.pftrace").stat().st_size > 1000


def test_wheel_with_the_capture_extra_captures(installed, tmp_path):
    """torch pinned to the CPU build first (a bare `torch` requirement could pull a CUDA build), then the
    wheel's `capture` extra; a torch-tool M capture of the packaged example, converted and analysed."""
    python, xsp, clean_env, wheel = installed
    for args in (["torch==2.13.0"], [f"{wheel}[capture]"]):
        step = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True, env=clean_env, timeout=900)
        assert step.returncode == 0, step.stdout + step.stderr
    work = tmp_path / "work"
    work.mkdir()
    capture = subprocess.run(
        [
            str(xsp),
            "capture",
            "--tool",
            "torch",
            "--levels",
            "M",
            "--batch-sizes",
            "2",
            "--iterations",
            "5",
            "--warmup",
            "1",
            "-o",
            "run",
            "-q",
            "--",
            str(python),
            "-m",
            "xsp_trace.capture.examples.tiny_cnn",
        ],
        capture_output=True,
        text=True,
        env=clean_env,
        cwd=work,
        timeout=900,
    )
    assert capture.returncode == 0, capture.stdout + capture.stderr
    steps = [[str(xsp), "convert", "run", "-o", "cap.duckdb", "-q"], [str(xsp), "analyze", "cap.duckdb", "-a", "model_info", "--format", "csv"]]
    out = ""
    for argv in steps:
        done = subprocess.run(argv, capture_output=True, text=True, env=clean_env, cwd=work, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        out = done.stdout
    (record,) = list(csv.DictReader(io.StringIO(out)))
    assert record["model"] == "tiny_cnn" and record["batch_size"] == "2" and record["inferences"] == "5"
