"""Every command's failures go through one handler (OneLineErrors.main -> cli_options.fail): an
InputError or an OSError from any command -- `capture` and `diff` included -- is one line naming the
file and exit 2, the traceback only with --debug."""

from __future__ import annotations

import ast
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from xsp_trace import cli


def _invoke(*args: str):
    return CliRunner().invoke(cli.app, list(args))


def test_capture_into_a_path_under_a_file_is_one_line(tmp_path):
    (tmp_path / "file").write_text("x")
    script = tmp_path / "model.py"
    script.write_text("print('never run')\n")
    result = _invoke("capture", "-o", str(tmp_path / "file" / "run"), "--levels", "M", str(script))
    assert result.exit_code == 2, result.output
    assert result.output.count("\n") == 1
    assert result.output.startswith("xsp-trace: error: ") and "Not a directory" in result.output
    assert "Traceback" not in result.output


@pytest.fixture
def two_databases(tmp_path):
    paths = [tmp_path / "base.duckdb", tmp_path / "new.duckdb"]
    for path in paths:
        duckdb.connect(str(path)).close()
    return paths


def test_an_os_error_inside_diff_is_one_line(monkeypatch, two_databases):
    import xsp_trace.analyze.diff as diff

    def unreadable(base, *_args):
        raise PermissionError(13, "Permission denied", str(base))

    monkeypatch.setattr(diff, "diff_databases", unreadable)
    result = _invoke("diff", *map(str, two_databases))
    assert result.exit_code == 2, result.output
    assert result.output == f"xsp-trace: error: {two_databases[0]}: Permission denied (check the path and its permissions)\n"


def test_debug_shows_the_exception(monkeypatch, two_databases):
    import xsp_trace.analyze.diff as diff

    def unreadable(base, *_args):
        raise PermissionError(13, "Permission denied", str(base))

    monkeypatch.setattr(diff, "diff_databases", unreadable)
    result = _invoke("--debug", "diff", *map(str, two_databases))
    assert isinstance(result.exception, PermissionError)


def test_no_command_has_a_handler_of_its_own():
    """cli.py stays thin: its commands catch nothing of InputError/OSError themselves."""
    tree = ast.parse(Path(cli.__file__).read_text())
    caught = [
        ast.unparse(handler.type)
        for handler in ast.walk(tree)
        if isinstance(handler, ast.ExceptHandler)
        and handler.type is not None
        and ("InputError" in ast.unparse(handler.type) or "OSError" in ast.unparse(handler.type))
    ]
    assert caught == []
