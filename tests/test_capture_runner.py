"""The leveled runner's failure modes through the CLI: one line, exit 2, captured runs kept and listed."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import require_nsys
from xsp_trace.cli import app

SCRIPTS = Path(__file__).parent / "capture_scripts"
CHECKOUT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def child_environment(monkeypatch):
    """The profiled scripts import xsp_trace.capture and tiny_model; one thread keeps them quick."""
    paths = [str(CHECKOUT), str(SCRIPTS), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _capture(*args: str):
    result = CliRunner().invoke(app, ["capture", "-q", *args], catch_exceptions=False)
    return result.exit_code, result.output


def _error_line(output: str) -> str:
    lines = [ln for ln in output.splitlines() if ln.startswith("xsp-trace: error:")]
    assert len(lines) == 1, output
    return lines[0]


@pytest.mark.slow  # a capture in a child process
def test_a_failing_script_stops_the_capture_and_keeps_the_runs_before_it(tmp_path):
    out = tmp_path / "run"
    code, output = _capture(
        "--levels", "M,ML,MLG", "--iterations", "2", "--warmup", "0", "-o", str(out), "--", sys.executable, str(SCRIPTS / "failing.py")
    )
    assert code == 2
    line = _error_line(output)
    assert "the command failed (exit 3) in run torch-ML-bs1: model weights are corrupt" in line
    assert "captured so far" in line and "torch-M-bs1" in line and "Traceback" not in output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "failed"
    assert [(r["key"], r["status"]) for r in manifest["runs"]] == [("torch-M-bs1", "ok"), ("torch-ML-bs1", "failed")]
    assert (out / manifest["runs"][0]["trace"]).exists()
    assert "runs/torch-ML-bs1/stderr.txt" in manifest["runs"][1]["files"]


@pytest.mark.slow  # a capture in a child process
def test_a_script_that_never_hands_over_a_model(tmp_path):
    code, output = _capture("--levels", "M", "--iterations", "1", "-o", str(tmp_path / "run"), "--", sys.executable, str(SCRIPTS / "no_model.py"))
    assert code == 2
    assert "no model found" in _error_line(output) and "xsp_trace.capture.run(model, make_input)" in output


@pytest.mark.slow  # a capture in a child process
def test_missing_profilers_are_reported_before_anything_runs(tmp_path):
    out = tmp_path / "run"
    code, output = _capture(
        "--tool", "nsys", "--nsys", str(tmp_path / "no-such-nsys"), "-o", str(out), "--", sys.executable, str(SCRIPTS / "tiny_model.py")
    )
    assert code == 2 and "nsys not found" in _error_line(output)
    code, output = _capture(
        "--metrics", "dram", "--ncu", str(tmp_path / "no-such-ncu"), "-o", str(out), "--", sys.executable, str(SCRIPTS / "tiny_model.py")
    )
    assert code == 2 and "ncu not found" in _error_line(output)
    assert not out.exists()


@pytest.mark.slow  # a capture in a child process
def test_mlg_through_nsys_needs_a_gpu(tmp_path):
    from xsp_trace.capture.tools import gpu_present

    if gpu_present():
        pytest.skip("this machine has a GPU, so nsys can trace CUDA")
    code, output = _capture("--tool", "nsys", "--levels", "MLG", "-o", str(tmp_path / "run"), "--", sys.executable, str(SCRIPTS / "tiny_model.py"))
    assert code == 2 and "needs an NVIDIA GPU" in _error_line(output) and "--tool torch" in output


def test_bad_options_and_existing_output(tmp_path):
    script = ["--", sys.executable, str(SCRIPTS / "tiny_model.py")]
    assert "unknown level" in _error_line(_capture("--levels", "M,X", "-o", str(tmp_path / "a"), *script)[1])
    assert "no command to profile" in _error_line(_capture("-o", str(tmp_path / "a"))[1])
    assert "batch-sizes" in _error_line(_capture("--batch-sizes", "1,x", "-o", str(tmp_path / "a"), *script)[1])
    existing = tmp_path / "full"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    code, output = _capture("-o", str(existing), *script)
    assert code == 2 and "already exists" in _error_line(output) and (existing / "keep.txt").read_text() == "mine"


def test_nsys_is_needed_only_for_the_levels_it_records(tmp_path):
    """M and ML are timed by the capture itself unless --nvtx-ranges: no nsys binary needed for them."""
    from xsp_trace.capture.runner import CaptureRequest, _check, _launch_command
    from xsp_trace.errors import InputError

    command = [sys.executable, "infer.py"]
    request = CaptureRequest(command=command, out=tmp_path / "run", levels=["M", "ML"], tools=["nsys"], nsys="/no/such/nsys")
    assert _check(request) == {}
    assert _launch_command(request, {}, "nsys", "ML", tmp_path) == command
    with pytest.raises(InputError, match="nsys not found"):
        _check(CaptureRequest(command=command, out=tmp_path / "run", levels=["M"], tools=["nsys"], nsys="/no/such/nsys", nvtx_ranges=True))
    nvtx = CaptureRequest(command=command, out=tmp_path / "run", levels=["M"], tools=["nsys"], nvtx_ranges=True)
    launched = _launch_command(nvtx, {"nsys": "/opt/nsys"}, "nsys", "M", tmp_path)
    assert launched[:3] == ["/opt/nsys", "profile", "--trace=nvtx"] and launched[-2:] == command


@pytest.mark.slow  # a capture in a child process
def test_an_nsys_run_without_ranges_is_an_empty_run(tmp_path):
    require_nsys()
    out = tmp_path / "run"
    code, output = _capture(
        "--tool",
        "nsys",
        "--nvtx-ranges",
        "--levels",
        "M",
        "--iterations",
        "2",
        "--warmup",
        "0",
        "-o",
        str(out),
        "--",
        sys.executable,
        str(SCRIPTS / "nvtx_silenced.py"),
    )
    assert code == 2
    line = _error_line(output)
    assert "holds no model range" in line and "NVTX_INJECTION64_PATH" in line
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["runs"][0]["status"] == "empty"
    assert "runs/nsys-M-bs1/trace.nsys-rep" in manifest["runs"][0]["files"]


@pytest.mark.slow  # a capture in a child process
def test_overwrite_replaces_a_run_directory_but_never_another_folder(tmp_path):
    script = ["--", sys.executable, str(SCRIPTS / "no_model.py")]
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    code, output = _capture("--overwrite", "-o", str(mine), *script)
    assert code == 2 and "not a capture run directory" in _error_line(output)
    assert (mine / "notes.txt").read_text() == "keep"


@pytest.mark.slow  # a capture in a child process
def test_a_partial_run_directory_converts_its_finished_runs(tmp_path):
    require_nsys()
    out = tmp_path / "run"
    code, output = _capture(
        "--tool",
        "nsys",
        "--nvtx-ranges",
        "--levels",
        "M,ML",
        "--iterations",
        "2",
        "--warmup",
        "0",
        "-o",
        str(out),
        "--",
        sys.executable,
        str(SCRIPTS / "failing.py"),
    )
    assert code == 2 and "torch" not in _error_line(output) and "nsys-M-bs1" in _error_line(output)
    result = CliRunner().invoke(app, ["convert", "-q", str(out)])
    assert result.exit_code == 0, result.output
    import duckdb

    db = duckdb.connect(str(out / "xsp.duckdb"), read_only=True)
    assert db.execute("SELECT level, batch_size, model FROM runs").fetchall() == [("M", 1, "tiny")]
    assert db.execute("SELECT count(*) FROM spans WHERE kind = 'model'").fetchone()[0] == 2


def test_converting_a_folder_that_is_not_a_run_directory(tmp_path):
    (tmp_path / "folder").mkdir()
    result = CliRunner().invoke(app, ["convert", "-q", str(tmp_path / "folder"), "-o", str(tmp_path / "x.duckdb")])
    assert result.exit_code == 2
    assert "without manifest.json, not a capture run directory" in result.output
    assert not (tmp_path / "x.duckdb").exists()
