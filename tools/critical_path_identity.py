"""Checks that the critical path of this checkout equals the one of an earlier revision of
xsp_trace/analyze/critical_path/walk.py, segment by segment and row by row of the table
xsp_critical_path, on every Kineto fixture of tests/data (and the two ranks of
kineto_two_ranks_sendrecv in one database): a rewrite of the walk or of its loading must not change a path.

    python -m tools.critical_path_identity --before 906f161

The earlier package is read from git (git archive) and imported beside the current one as
xsp_trace_before -- its loading and hops included; both walk every unit (step, or whole run) of
the same converted database. Prints one line per trace and exits 1 when any differs.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _module_at(revision: str, folder: Path):
    """The revision's xsp_trace.analyze.critical_path.walk, imported from a copy of its package renamed
    xsp_trace_before, so that its loading (critical_path_run) and hops (critical_path_chase) are
    the revision's too."""
    tree = [p for p in ("xsp_trace", "queries", "schemas", "capture") if (ROOT / p).exists()]
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, *tree], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    (folder / "xsp_trace").rename(folder / "xsp_trace_before")
    init = folder / "xsp_trace_before" / "__init__.py"
    spec = importlib.util.spec_from_file_location("xsp_trace_before", init, submodule_search_locations=[str(init.parent)])
    assert spec is not None and spec.loader is not None
    package = importlib.util.module_from_spec(spec)
    sys.modules["xsp_trace_before"] = package
    spec.loader.exec_module(package)
    return importlib.import_module("xsp_trace_before.analyze.critical_path")


def _paths(module, con) -> list[tuple]:
    unit_rows = module.units(con)
    runs = {run_id: module.load_run(con, run_id) for run_id in sorted({u[0] for u in unit_rows})}
    ranks = module.Ranks(runs, unit_rows) if len(runs) > 1 else None
    for run in runs.values():
        if hasattr(module, "prepare_chase"):  # the chase of precomputed hops, where the module has one
            module.prepare_chase(run, ranks)
    out = []
    for run_id, iteration, _, start_ns, end_ns, pid, tid in unit_rows:
        for s in module.merged(module.walk(runs[run_id], int(start_ns), int(end_ns), (int(pid), int(tid)), ranks)[::-1]):
            span_id = int(runs[s.run_id].spans["span_id"][s.row]) if s.row >= 0 else None
            out.append((run_id, iteration, s.run_id, span_id, s.kind, s.start_ns, s.end_ns))
    return out


def _table(module, con) -> tuple:
    """The rows the module writes into xsp_critical_path (what the analyses read)."""
    module.build_critical_path(con)
    return tuple(con.execute("SELECT * FROM xsp_critical_path ORDER BY run_id, step_span_id, seq").fetchall())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=True, help="git revision holding the earlier critical_path.py")
    parser.add_argument(
        "traces", nargs="*", type=Path, help="traces, or databases converted beforehand (.duckdb); default: every Kineto fixture of tests/data"
    )
    args = parser.parse_args()
    from typer.testing import CliRunner

    from xsp_trace.analyze.critical_path import walk as after
    from xsp_trace.analyze.session import AnalysisOptions, open_session
    from xsp_trace.cli import app

    traces = args.traces or sorted((ROOT / "tests" / "data").glob("*/*.json.gz"))
    groups = [[t] for t in traces]
    if not args.traces:
        groups.append(sorted((ROOT / "tests" / "data" / "kineto_two_ranks_sendrecv").glob("*.json.gz")))
    differ = False
    with tempfile.TemporaryDirectory() as folder:
        before = _module_at(args.before, Path(folder))
        for i, group in enumerate(groups):
            database = Path(folder) / f"{i}.duckdb"
            if group[0].suffix == ".duckdb":  # converted beforehand (bench/critical_path.py --keep)
                database = group[0]
            else:
                result = CliRunner().invoke(app, ["convert", *map(str, group), "-o", str(database), "-q"])
                if result.exit_code != 0:
                    print(f"skip {group[0].name}: convert exit {result.exit_code}")
                    continue
            con = open_session(database, AnalysisOptions())
            old, new = _paths(before, con), _paths(after, con)
            old.append(_table(before, open_session(database, AnalysisOptions())))
            new.append(_table(after, open_session(database, AnalysisOptions())))
            name = " + ".join(p.parent.name + "/" + p.name for p in group)
            if old != new:
                first = next(i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b) if len(old) == len(new) else min(len(old), len(new))
                print(
                    f"DIFFERENT {name}: {len(old)} vs {len(new)} segments, first difference at {first}: {old[first : first + 1]} vs {new[first : first + 1]}"
                )
                differ = True
                continue
            print(f"same {name}: {len(new)} segments")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
