"""The Python API (capture_model in process, run() on its own) and the example shipped in --help."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

torch = pytest.importorskip("torch")

sys.path.insert(0, str(Path(__file__).parent / "capture_scripts"))
from tiny_model import build, make_input  # noqa: E402

from xsp_trace.capture import capture_model, run  # noqa: E402
from xsp_trace.cli import app  # noqa: E402

CHECKOUT = Path(__file__).resolve().parent.parent


def _kineto_names(path: Path) -> list[str]:
    events = json.loads(path.read_text())["traceEvents"]
    return [e["name"] for e in events if e.get("ph") == "X"]


@pytest.mark.slow
def test_capture_model_writes_a_run_directory_in_process(tmp_path):
    manifest = capture_model(build(), make_input, tmp_path / "run", name="tiny", levels=["M", "MLG"], batch_sizes=[1, 3], iterations=2, warmup=1)
    assert manifest["status"] == "complete" and manifest["model"]["name"] == "tiny"
    assert [(r["level"], r["batch_size"], r["status"]) for r in manifest["runs"]] == [
        ("M", 1, "ok"),
        ("MLG", 1, "ok"),
        ("M", 3, "ok"),
        ("MLG", 3, "ok"),
    ]
    on_disk = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert on_disk["runs"] == manifest["runs"]
    for entry in manifest["runs"]:
        names = _kineto_names(tmp_path / "run" / entry["trace"])
        assert names.count("xsp.model:tiny") == 2
        assert any(n.startswith("aten::") for n in names) == (entry["level"] == "MLG")
        session = json.loads((tmp_path / "run" / entry["session"]).read_text())
        assert session["layers"][0]["input_shapes"] == [[entry["batch_size"], 3, 16, 16]]
        assert len(session["latencies_ns"]["instrumented"]) == len(session["latencies_ns"]["uninstrumented"]) == 2
    with pytest.raises(FileExistsError):
        capture_model(build(), make_input, tmp_path / "run", levels=["M"], iterations=1)


@pytest.mark.slow  # captures a torch model at three levels
def test_run_on_its_own_captures_into_the_given_folder(tmp_path, monkeypatch):
    for key in [k for k in os.environ if k.startswith("XSP_")]:
        monkeypatch.delenv(key)
    manifest = run(build(), make_input, name="tiny", iterations=1, warmup=0, out=tmp_path / "own")
    assert [r["level"] for r in manifest["runs"]] == ["M", "ML", "MLG"]
    with pytest.raises(TypeError, match="no model found"):
        run(object(), make_input)


@pytest.mark.slow
def test_the_help_example_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(CHECKOUT), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    out = tmp_path / "tiny-run"
    result = CliRunner().invoke(
        app,
        [
            "capture",
            "-q",
            "--levels",
            "ML",
            "--iterations",
            "2",
            "--warmup",
            "1",
            "-o",
            str(out),
            "--",
            sys.executable,
            "-m",
            "xsp_trace.capture.examples.tiny_cnn",
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"wrote {out} (1 runs: torch-ML-bs1)" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    names = _kineto_names(out / manifest["runs"][0]["trace"])
    assert names.count("xsp.model:tiny_cnn") == 2 and names.count("xsp.layer:5:attention:MultiheadAttention") == 2
