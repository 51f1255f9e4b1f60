"""The wheel works in a clean virtual environment with its declared dependencies only.

`pip install xsp-trace` must pull everything `xsp-trace convert` imports (numpy was once imported
but not declared, and a --no-deps install could not see it). The venv has no system site
packages and no checkout on its path; the convert runs from a temporary folder holding only a
copy of a real nsys export, and the kernel count is compared with the export's own kernel table.
About a minute (pip copies the dependency wheels from the local index/cache).
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import venv
from pathlib import Path

from conftest import NSYS_EXPORTS

ROOT = Path(__file__).parent.parent
FIXTURE = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]


def test_wheel_in_clean_venv_converts(tmp_path):
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

    work = tmp_path / "work"
    work.mkdir()
    shutil.copyfile(FIXTURE, work / "trace.sqlite")
    convert = subprocess.run(
        [str(env_dir / "bin" / "xsp-trace"), "convert", "trace.sqlite", "-o", "out.duckdb", "-q"],
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
