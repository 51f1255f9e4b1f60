"""`capture -- python ...` runs xsp-trace's own interpreter, not the first `python` on PATH, and warns
when the profiled script imports another copy of xsp_trace (through the CLI, in-process)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xsp_trace.cli import app

SCRIPTS = Path(__file__).parent / "capture_scripts"
CHECKOUT = Path(__file__).resolve().parent.parent
WRONG = "this is the wrong python"


@pytest.fixture
def wrong_pythons_first_on_path(tmp_path, monkeypatch):
    """`python` and `python3` first on PATH that fail loudly, as another environment's would."""
    folder = tmp_path / "other-env-bin"
    folder.mkdir()
    for name in ("python", "python3"):
        fake = folder / name
        fake.write_text(f"#!/bin/sh\necho '{WRONG}' >&2\nexit 9\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    return folder


def _capture(out: Path, *command: str):
    args = ["capture", "--levels", "M", "--iterations", "1", "--warmup", "0", "-o", str(out), "--", *command]
    return CliRunner().invoke(app, args, catch_exceptions=False)


@pytest.mark.slow  # a capture in a child process
@pytest.mark.parametrize("bare", ["python", "python3"])
def test_a_bare_python_is_xsp_traces_own_interpreter(tmp_path, monkeypatch, wrong_pythons_first_on_path, bare):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(CHECKOUT), str(SCRIPTS)]))
    result = _capture(tmp_path / "run", bare, str(SCRIPTS / "tiny_model.py"))
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["command"][0] == sys.executable
    assert [r["status"] for r in manifest["runs"]] == ["ok"]
    assert "warning" not in result.output and not manifest.get("warnings")  # the same copy of xsp_trace
    # A path is run as given: the fake on PATH is what a bare name would have reached.
    result = _capture(tmp_path / "run2", str(wrong_pythons_first_on_path / bare), str(SCRIPTS / "tiny_model.py"))
    assert result.exit_code == 2 and WRONG in result.output


@pytest.mark.slow  # a capture in a child process
def test_a_script_importing_another_copy_of_xsp_trace_is_warned_about(tmp_path, monkeypatch, wrong_pythons_first_on_path):
    other = tmp_path / "other-checkout"
    shutil.copytree(CHECKOUT / "xsp_trace", other / "xsp_trace", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(other), str(SCRIPTS)]))
    result = _capture(tmp_path / "run", "python", str(SCRIPTS / "tiny_model.py"))
    assert result.exit_code == 0, result.output
    expected = f"xsp-trace: warning: the script imported another copy of xsp_trace ({(other / 'xsp_trace').resolve()})"
    assert result.output.count(expected) == 1, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert len(manifest["warnings"]) == 1 and str(other / "xsp_trace") in manifest["warnings"][0]
    # Under -q (no progress lines) the warning still reaches stderr.
    args = [
        "capture",
        "-q",
        "--levels",
        "M",
        "--iterations",
        "1",
        "--warmup",
        "0",
        "-o",
        str(tmp_path / "run-q"),
        "--",
        "python",
        str(SCRIPTS / "tiny_model.py"),
    ]
    result = CliRunner().invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 0 and result.stderr.count(expected) == 1, result.output


def test_capture_help_says_which_python_runs():
    result = CliRunner().invoke(app, ["capture", "--help"], env={"COLUMNS": "200"})
    assert "A bare python or python3 after -- is xsp-trace's own interpreter" in result.output.replace("`", "")
