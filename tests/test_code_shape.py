"""The code stays readable in pieces: no function or method of xsp_trace/ or capture/ runs over
MAX_FUNCTION_LINES lines (read with ast). A function's length is its body after the docstring: a
CLI command's declarative option list (typer.Option per parameter) is its signature, not its logic.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FUNCTION_LINES = 100


def _sources() -> list[Path]:
    # capture/ is read in place; xsp_trace/capture is only a symlink to it.
    return [
        p for folder in ("xsp_trace", "capture") for p in sorted((ROOT / folder).rglob("*.py")) if (ROOT / "xsp_trace" / "capture") not in p.parents
    ]


def _body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    body = node.body
    if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    return (node.end_lineno or node.lineno) - body[0].lineno + 1


def test_the_sources_are_found():
    names = {p.relative_to(ROOT).as_posix() for p in _sources()}
    assert {"xsp_trace/cli.py", "capture/runner.py", "xsp_trace/convert/common.py"} <= names
    assert not any(name.startswith("xsp_trace/capture/") for name in names)


def test_no_function_over_the_limit():
    long = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _body_lines(node) > MAX_FUNCTION_LINES:
                long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {_body_lines(node)} lines")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split them): {long}"
