"""`.ci/setup` works with a stock interpreter that refuses system-wide installs (PEP 668): Debian's
own /usr/bin/python3, which answers `pip install` with "externally-managed-environment" on these
machines too. The checkout's tracked files are copied to a temporary folder, `.ci/setup` runs there
with PYTHON=/usr/bin/python3 and nothing else on PATH, and the `xsp-trace` it installs into `.venv`
converts a real nsys export whose kernel count is read from the export itself. About two minutes
(pip copies the wheels from the local index/cache).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from conftest import NSYS_EXPORTS

pytestmark = pytest.mark.slow  # wheels and virtual environments

ROOT = Path(__file__).parent.parent
STOCK_PYTHON = Path("/usr/bin/python3")
FIXTURE = NSYS_EXPORTS["nsys_2026_mock_rtx3080"]


def _refuses_system_installs(python: Path) -> bool:
    probe = subprocess.run([str(python), "-m", "pip", "install", "--dry-run", "--no-index", "xsp-trace"], capture_output=True, text=True)
    return "externally-managed-environment" in probe.stdout + probe.stderr


@pytest.mark.skipif(not STOCK_PYTHON.exists(), reason="no /usr/bin/python3 on this machine")
def test_setup_with_a_stock_python_that_refuses_system_installs(tmp_path):
    if not _refuses_system_installs(STOCK_PYTHON):
        pytest.skip("/usr/bin/python3 here accepts system installs: the case this test covers is absent")
    checkout = tmp_path / "checkout"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        source = ROOT / name
        if name.startswith("tests/data/") or not source.is_file() or source.is_symlink():
            continue
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, checkout / name)
    for link in ("capture", "queries", "schemas"):  # the package's symlinks to the top-level folders
        (checkout / "xsp_trace" / link).symlink_to(f"../{link}")
    env = {"PATH": "/usr/bin:/bin", "PYTHON": str(STOCK_PYTHON), "HOME": str(Path.home())}
    setup = subprocess.run(["bash", ".ci/setup"], cwd=checkout, capture_output=True, text=True, env=env, timeout=900)
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-3000:]
    python = checkout / ".venv" / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"], capture_output=True, text=True).stdout.strip() == "/usr"

    shutil.copyfile(FIXTURE, tmp_path / "trace.sqlite")
    convert = subprocess.run(
        [str(checkout / ".venv" / "bin" / "xsp-trace"), "convert", "trace.sqlite", "-o", "out.duckdb", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert convert.returncode == 0, convert.stderr
    count = subprocess.run(
        [
            str(python),
            "-c",
            "import duckdb; print(duckdb.connect('out.duckdb', read_only=True).execute(\"SELECT count(*) FROM spans WHERE kind = 'kernel'\").fetchone()[0])",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    with sqlite3.connect(FIXTURE) as export:
        kernels = export.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert int(count.stdout) == kernels > 0
