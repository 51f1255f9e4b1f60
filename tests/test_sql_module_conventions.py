"""The conventions of the SQL modules (docs/design.md), checked on every file so new ones keep them:

- each file sits in the folder of its role (analyses, correlate, ingest, perfetto) and starts with
  `-- <role>/<file stem>: <what it computes>` and says what it reads ("From" or
  "from"/"reads" in the header comment);
- every output column of a query users run (the analyses, kernel_summary, nvtx_gpu_projection)
  has a comment above it; one comment may describe a small group of columns on the lines right
  below it ("-- Run and GPU."), at most MAX_GROUP;
- the TEMP views, tables and macros a module creates are public with the module family's prefix
  (`xsp_`, `kineto_`, `nsys_`, `perfetto_`) or private with a leading underscore;
- the library modules (lib/) declare what they include in a header line (`-- include: lib/a, lib/b`)
  that names existing modules, without a cycle, and every name a module uses from another module is
  defined in one it includes (directly or through others); no SQL module is over MAX_LINES lines;
- every analysis declares its includes (and uses only what they reach), its title and group in its
  header; a `_xsp_` name is used only in the library module or analysis that creates it (what
  others read is public, `xsp_`).
"""

from __future__ import annotations

import re
from itertools import pairwise
from pathlib import Path

import pytest

QUERIES = Path(__file__).parent.parent / "queries"
SQL_FILES = sorted(QUERIES.rglob("*.sql"))
ROLES = ("analyses", "correlate", "ingest", "lib", "perfetto")
USER_QUERIES = [p for p in SQL_FILES if p.parent.name == "analyses"]
LIB_FILES = [p for p in SQL_FILES if p.parent.name == "lib"]
MAX_LINES = 300


def _module(path: Path) -> str:
    """The module name of a SQL file: <role folder>/<stem>, e.g. analyses/kernel_info."""
    return f"{path.parent.name}/{path.stem}"


def test_every_sql_file_sits_in_a_role_folder():
    assert {p.parent.name for p in SQL_FILES} == set(ROLES)
    assert [p.name for p in QUERIES.glob("*.sql")] == []


PUBLIC_PREFIXES = ("xsp_", "kineto_", "nsys_", "perfetto_")
MAX_GROUP = 1  # every output column has its own comment line(s) right above it


def _header(text: str) -> str:
    lines = []
    for line in text.splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    return " ".join(lines)


@pytest.mark.parametrize("path", SQL_FILES, ids=_module)
def test_header_names_the_module_and_its_inputs(path):
    text = path.read_text()
    assert text.startswith(f"-- {_module(path)}: "), f"{path.name} must start with '-- {_module(path)}: <what it computes>'"
    header = _header(text)
    assert len(header) > 60, f"{path.name}: the header comment should say what it computes and from what"
    assert re.search(r"\b(from|reads?|over)\b", header, re.IGNORECASE), f"{path.name}: the header should say what it reads"


def _blank(match: re.Match) -> str:
    return re.sub(r"[^\n]", " ", match.group(0))


def _code_only(sql: str) -> str:
    """The SQL with string literals and comments blanked out, same length (positions kept)."""
    return re.sub(r"'(?:[^']|'')*'|--[^\n]*", _blank, sql)


def _final_select_list(sql: str) -> str:
    """The select list of the file's last top-level SELECT (the statement users see)."""
    code = _code_only(sql)
    depth, last_select, tokens = 0, None, []
    for m in re.finditer(r"\(|\)|\bSELECT\b|\bFROM\b|;", code, re.IGNORECASE):
        tok = m.group(0).upper()
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0:
            tokens.append((tok, m.start(), m.end()))
    for i, (tok, _, _end) in enumerate(tokens):
        if tok == "SELECT":
            last_select = i
    assert last_select is not None
    start = tokens[last_select][2]
    stop = next(s for tok, s, _ in tokens[last_select + 1 :] if tok == "FROM")
    return sql[start:stop]


def _split_top_level(select_list: str) -> list[str]:
    """The select list cut at its top-level commas (commas inside comments, strings and calls ignored)."""
    code = _code_only(select_list)
    cuts, depth = [], 0
    for i, ch in enumerate(code):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            cuts.append(i)
    bounds = [-1, *cuts, len(select_list)]
    return [select_list[a + 1 : b] for a, b in pairwise(bounds)]


@pytest.mark.parametrize("path", USER_QUERIES, ids=_module)
def test_every_output_column_has_a_comment(path):
    uncovered, run = [], None
    for item in _split_top_level(_final_select_list(path.read_text())):
        if "--" in item:
            run = 1  # this column's own comment (or the head of a group it describes)
        elif run is not None and run < MAX_GROUP and re.match(r"[ \t]*\n[ \t]*\S", item):
            run += 1  # the next line under the same comment
        else:
            uncovered.append(item.strip().splitlines()[-1])
            run = None
    assert uncovered == [], f"{path.name}: output columns without a comment above them: {uncovered}"


@pytest.mark.parametrize("path", SQL_FILES, ids=_module)
def test_created_names_are_prefixed_or_private(path):
    text = re.sub(r"--.*", "", path.read_text())
    created = re.findall(
        r"CREATE\s+(?:OR\s+REPLACE\s+)?TEMP(?:ORARY)?\s+(?:VIEW|TABLE|MACRO)\s+(?:IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][\w]*)", text, re.IGNORECASE
    )
    bad = [name for name in created if not (name.startswith("_") or name.startswith(PUBLIC_PREFIXES))]
    assert bad == [], f"{path.name}: TEMP names neither public with a module prefix nor private (_): {bad}"


@pytest.mark.parametrize("path", SQL_FILES, ids=_module)
def test_no_module_is_over_the_line_limit(path):
    assert len(path.read_text().splitlines()) <= MAX_LINES, f"{path.name}: split it into topic modules"


def _includes(path: Path) -> list[str]:
    lines = [line for line in path.read_text().splitlines()[:40] if line.startswith("-- include:")]
    assert len(lines) == 1, f"{path.name}: needs one '-- include: lib/a, lib/b' header line (empty when it includes none)"
    return lines[0].removeprefix("-- include:").replace(",", " ").split()


def _created(path: Path) -> set[str]:
    text = re.sub(r"--.*", "", path.read_text())
    return set(re.findall(r"CREATE\s+OR\s+REPLACE\s+TEMP\s+(?:VIEW|TABLE|MACRO)\s+(\w+)", text, re.IGNORECASE))


def test_library_includes_resolve_and_form_no_cycle():
    from xsp_trace.analyze.sql_library import load_order, module_names

    graph = {_module(p): _includes(p) for p in LIB_FILES}
    assert sorted(graph) == list(module_names())
    for name, included in graph.items():
        assert set(included) <= set(graph), f"{name} includes unknown modules: {set(included) - set(graph)}"
    order = load_order(graph)  # raises on a cycle
    assert all(order.index(i) < order.index(name) for name, included in graph.items() for i in included)


def test_a_module_uses_only_what_it_includes():
    """Every library name a module's code mentions is its own or defined in a module it reaches by includes."""
    from xsp_trace.analyze.sql_library import load_order

    made = {_module(p): _created(p) for p in LIB_FILES}
    owner = {name: module for module, names in made.items() for name in names}
    for path in LIB_FILES:
        module = _module(path)
        reachable = set(load_order([module]))
        code = _code_only(path.read_text())
        used = {owner[w] for w in set(re.findall(r"\b(_?xsp_\w+)\b", code)) if w in owner}
        assert used <= reachable, f"{module} uses names of {sorted(used - reachable)} without including them"


def test_load_order_refuses_a_cycle(monkeypatch):
    from xsp_trace.analyze import sql_library as sqllib

    fake = {"lib/a": ("lib/b",), "lib/b": ("lib/a",)}
    monkeypatch.setattr(sqllib, "module_names", lambda: tuple(fake))
    monkeypatch.setattr(sqllib, "includes", lambda name: fake[name])
    with pytest.raises(ValueError, match="lib/a -> lib/b -> lib/a"):
        sqllib.load_order(["lib/a"])


def _statements(sql: str) -> list[str]:
    """The module's statements, cut at the semicolons outside comments and strings."""
    code = _code_only(sql)
    cuts = [i for i, ch in enumerate(code) if ch == ";"]
    bounds = [-1, *cuts]
    return [sql[a + 1 : b] for a, b in pairwise(bounds)]


PUBLIC_VIEW = re.compile(r"CREATE\s+OR\s+REPLACE\s+TEMP\s+(?:VIEW|TABLE)\s+(xsp_\w+)\s+AS\b", re.IGNORECASE)


def _public_views() -> list[tuple[str, str]]:
    found = []
    for path in LIB_FILES:
        for statement in _statements(path.read_text()):
            match = PUBLIC_VIEW.search(_code_only(statement))
            if match:
                found.append((f"{_module(path)}:{match.group(1)}", statement[match.end() :]))
    return found


@pytest.mark.parametrize(("view", "body"), _public_views(), ids=[v for v, _ in _public_views()])
def test_every_public_view_documents_its_columns(view, body):
    if not re.search(r"\bFROM\b", _code_only(body), re.IGNORECASE):
        body += "\nFROM"  # a SELECT of values only: its select list runs to the end
    uncovered, run = [], None
    for item in _split_top_level(_final_select_list(body)):
        if "--" in item:
            run = 1
        elif run is not None and run < MAX_GROUP and re.match(r"[ \t]*\n[ \t]*\S", item):
            run += 1
        else:
            uncovered.append(item.strip().splitlines()[-1])
            run = None
    assert uncovered == [], f"{view}: output columns without a comment above them: {uncovered}"
    assert not re.search(r"(^|[\s,.])\*\s*(,|$)", _code_only(_final_select_list(body)).strip()), f"{view}: name its columns, not *"


@pytest.mark.parametrize("path", USER_QUERIES, ids=_module)
def test_every_analysis_includes_what_it_uses(path):
    from xsp_trace.analyze.sql_library import header_fields, includes, load_order

    fields = header_fields(_module(path))
    assert "include" in fields, f"{path.name}: needs a '-- include: lib/a, lib/b' header line (empty when it includes none)"
    reachable = set(load_order(includes(_module(path))))
    owner = {name: _module(p) for p in LIB_FILES for name in _created(p)}
    used = {owner[w] for w in set(re.findall(r"\b(_?xsp_\w+)\b", _code_only(path.read_text()))) if w in owner}
    assert used <= reachable, f"{path.name} uses names of {sorted(used - reachable)} without including them"


@pytest.mark.parametrize("path", [*USER_QUERIES, *LIB_FILES], ids=_module)
def test_private_names_stay_in_their_module(path):
    """A `_xsp_` name is used only in the module that creates it: what others read is public (xsp_)."""
    code = _code_only(path.read_text())
    own = _created(path)
    borrowed = sorted(set(re.findall(r"\b(_xsp_\w+)\b", code)) - own)
    assert borrowed == [], f"{_module(path)} uses private names made elsewhere: {borrowed} (make them public, xsp_...)"


def test_private_name_check_catches_a_borrowed_name(tmp_path):
    borrowed = tmp_path / "analyses" / "borrowing.sql"
    borrowed.parent.mkdir()
    borrowed.write_text("-- analyses/borrowing: reads a private view.\n-- include: lib/experiments\nSELECT * FROM _xsp_level_preference\n")
    with pytest.raises(AssertionError, match="_xsp_level_preference"):
        test_private_names_stay_in_their_module(borrowed)


def test_every_analysis_file_is_in_the_catalog_with_its_header_title_and_group():
    from xsp_trace.analyze.catalog import ANALYSES, BY_NAME

    in_catalog = {a.name for a in ANALYSES}
    # Read by `xsp-trace diff` and by capture checks, not printed by analyze: no title or group.
    outside = {"diff_totals", "diff_steps", "diff_on_path", "capture_level_overhead"}
    assert {p.stem for p in USER_QUERIES} == in_catalog | outside
    kernel_info = BY_NAME["kernel_info"]
    assert (kernel_info.title, kernel_info.group, kernel_info.builds) == ("Kernel information", "kernel", ())
    assert BY_NAME["what_if"].builds == ("xsp_what_if",)
    assert {a.group for a in ANALYSES} == {"model", "layer", "kernel", "gpu", "rules", "comm", "summary", "compare"}
