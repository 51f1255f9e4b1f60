"""The docs cannot drift from the code (as sqlite-utils checks its docs): every repository path that
README.md, CONTRIBUTING.md and docs/*.md name exists, every `xsp-trace` command and option they show is one the CLI
has, every analysis of the catalog is described somewhere, and the schema version is stated only
in the code (xsp_trace.store.database.SCHEMA_VERSION), which the docs and the DDL refer to by name.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
# Where a relative path in the docs may start: the checkout, and the folders docs name files in.
BASES = [ROOT, ROOT / "xsp_trace", ROOT / "queries"]
_COMMANDS = {"convert", "perfetto", "capture", "query", "analyze", "diff", "metrics"}
_PATH = re.compile(r"(?<![\w./-])@?((?:\.?[\w-]+/)+[\w.*-]*|[\w-]+\.(?:py|sql|md|sh|toml))(?![\w/])")


def _code_spans(text: str) -> list[str]:
    """The text of every `inline` span and every line of a fenced block (continuations joined)."""
    spans: list[str] = []
    blocks = re.findall(r"```[^\n]*\n(.*?)```", text, flags=re.S)
    for block in blocks:
        spans.extend(block.replace("\\\n", " ").splitlines())
    without_blocks = re.sub(r"```.*?```", "", text, flags=re.S)
    spans.extend(m.replace("\n", " ") for m in re.findall(r"`([^`]+)`", without_blocks))
    return spans


def _repo_path(token: str) -> Path | None:
    """The path `token` names in the checkout, or None when it names no folder of the checkout
    (a user's file such as ranks/*.json.gz or run.duckdb)."""
    token = token.lstrip("@").rstrip(".,:;)")
    if set(token.split("/")) <= _COMMANDS:  # "analyze/diff/perfetto/query": commands, not a path
        return None
    first = token.split("/")[0]
    for base in BASES:
        if first and (base / first).exists() and (base / first) != ROOT / "xsp_trace" / "queries":
            # A query's resource name (`analyses/kernel_info`) is its file without the suffix.
            return base / f"{token}.sql" if base.name == "queries" and "." not in token and not token.endswith("/") else base / token
    if "/" not in token:  # a bare file name: one of the checkout's, anywhere
        return next(iter(ROOT.glob(f"[!.]*/**/{token}")), ROOT / token) if token.endswith((".py", ".sql")) else None
    return None


def _named_paths() -> list[tuple[str, str]]:
    named = []
    for doc in DOCS:
        for span in _code_spans(doc.read_text()):
            named.extend((doc.name, m) for m in _PATH.findall(span))
    return named


def test_the_docs_name_paths():
    """The path check has something to check (the pattern still matches the docs' paths)."""
    tokens = {token for _, token in _named_paths()}
    assert {"bench/input_limits.py", "docs/scale.md", "schemas/xsp_schema.sql"} <= tokens


@pytest.mark.parametrize("doc", [d.name for d in DOCS])
def test_every_path_the_docs_name_exists(doc):
    missing = []
    for name, token in _named_paths():
        if name != doc:
            continue
        path = _repo_path(token)
        if path is None:
            continue
        exists = any(path.parent.glob(path.name)) if "*" in path.name else path.exists()
        if not exists:
            missing.append(token)
    assert not missing, f"{doc} names paths that do not exist: {missing}"


def _cli():
    from xsp_trace.cli import app

    return typer.main.get_command(app)


def _shown_invocations() -> list[tuple[str, list[str]]]:
    """(doc, words after `xsp-trace`) for every command line the docs show."""
    shown = []
    for doc in DOCS:
        for span in _code_spans(doc.read_text()):
            for part in re.split(r"&&|\|", span):
                if "xsp-trace " not in part:
                    continue
                line = part.split("xsp-trace ", 1)[1].split(" #")[0]
                try:
                    words = shlex.split(line)
                except ValueError:
                    words = line.split()
                shown.append((doc.name, words))
    return shown


def test_every_command_and_option_the_docs_show_exists():
    group = _cli()
    shown = _shown_invocations()
    assert len(shown) > 30  # README's examples are found
    wrong = []
    for doc, words in shown:
        if not words or words[0].startswith("-"):
            continue
        names = words[0].split("/")  # "query/analyze DIR"
        for name in names:
            command = group.commands.get(name)
            if command is None:
                if re.fullmatch(r"[a-z]+", name) and len(names) == 1 and words[0] not in ("capture", "RUN_DIR"):
                    wrong.append((doc, f"no command {name!r}"))
                continue
            options = {opt for param in [*command.params, *group.params] for opt in (*param.opts, *param.secondary_opts)}
            for word in words[1:]:
                if word == "--":  # the script's own arguments follow
                    break
                option = word.split("=")[0]
                if option.startswith("-") and option != "-" and option not in options:
                    wrong.append((doc, f"xsp-trace {name} has no option {option}"))
    assert not wrong, wrong


def test_every_analysis_is_described_in_the_docs():
    from xsp_trace.analyze.catalog import ANALYSES

    text = "\n".join(doc.read_text() for doc in DOCS)
    undocumented = [a.name for a in ANALYSES if not re.search(rf"\b{a.name}\b", text)]
    assert not undocumented, f"analyses no doc describes (add a line to README.md's Analyses): {undocumented}"


_VERSION_NUMBER = re.compile(r"schema(?:_info)?,? (?:version )?\(?(?:version )?\d+\b(?!\.)", re.I)


def test_the_schema_version_is_stated_only_in_the_code():
    """The docs and the DDL name SCHEMA_VERSION instead of a number that would go stale."""
    from xsp_trace.store.database import SCHEMA_VERSION

    stated = []
    for path in [*DOCS, ROOT / "schemas" / "xsp_schema.sql"]:
        stated.extend((path.name, m.group(0)) for m in _VERSION_NUMBER.finditer(path.read_text()))
    assert not stated, f"schema version numbers outside xsp_trace/store/database.py (it is {SCHEMA_VERSION}): {stated}"
    assert "SCHEMA_VERSION" in (ROOT / "schemas" / "xsp_schema.sql").read_text()
    assert re.fullmatch(r"\d+", SCHEMA_VERSION)


# Paths the code's comments and docstrings name: from the checkout's top (what a reader would open).
_CODE_PATH = re.compile(r"(?<![\w./-])((?:xsp_trace|tests|queries|docs|bench|tools|schemas|capture|\.ci)/(?:[\w.-]+/)*[\w.*-]*)")


def _generated_folders() -> list[str]:
    """Folders .gitignore names: written by runs (bench/data/, tests/artifacts/), absent in a checkout."""
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return [line.strip("/") + "/" for line in lines if line.endswith("/") and "*" not in line]


def test_every_path_the_code_names_exists():
    generated = _generated_folders()
    sources = [
        path
        for folder in ("xsp_trace", "capture", "bench", "tools", "queries", "schemas", "tests")
        for path in sorted((ROOT / folder).rglob("*"))
        if path.suffix in (".py", ".sql") and "data" not in path.relative_to(ROOT).parts and not (ROOT / folder).is_symlink()
    ]
    assert len(sources) > 100
    missing = []
    for source in sources:
        for number, line in enumerate(source.read_text().splitlines(), 1):
            for token in _CODE_PATH.findall(line):
                token = token.rstrip(".,:;)")
                if "{" in token or any(f"/{g}" in f"/{token}/" for g in generated):
                    continue
                path = ROOT / token
                if not (any(path.parent.glob(path.name)) if "*" in path.name else path.exists()):
                    missing.append(f"{source.relative_to(ROOT)}:{number}: {token}")
    assert not missing, missing
