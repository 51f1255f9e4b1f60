"""What the analyses inside the database cost and give: for each trace, convert it once, then time

  * install: `install_analyses` on a copy of the database (what convert adds at its end),
  * session: `open_session` (an `analyze` session loading the same SQL library TEMP),
  * plain: every installed analysis through a bare DuckDB connection (`SELECT * FROM xsp.NAME`),
  * analyze: the same analyses through the session (`run_analysis`),

median of --repeat runs each, in this process. Prints markdown for BENCHMARKS.md.

    python -m bench.installed_analyses tests/data/kineto_rocm_mi250/*.json.gz tests/data/kineto_2025_all_options_h100/*.json.gz
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import duckdb

from xsp_trace.analyze.install import install_analyses
from xsp_trace.analyze.session import open_session, run_analysis
from xsp_trace.convert import ConvertOptions, convert_files


def _median(times: list[float]) -> float:
    return statistics.median(times)


def measure(trace: Path, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "run.duckdb"
        started = time.perf_counter()
        convert_files([trace], db, ConvertOptions())
        convert_s = time.perf_counter() - started
        con = duckdb.connect(str(db), read_only=True)
        names = [r[0] for r in con.execute("SELECT name FROM xsp.xsp_analyses WHERE installed").fetchall()]
        con.close()
        install, session, plain, analyze = [], [], [], []
        for i in range(repeat):
            copy = Path(folder) / f"copy{i}.duckdb"
            shutil.copy(db, copy)
            con = duckdb.connect(str(copy))
            started = time.perf_counter()
            install_analyses(con)
            install.append(time.perf_counter() - started)
            con.close()
            started = time.perf_counter()
            con = open_session(db)
            session.append(time.perf_counter() - started)
            started = time.perf_counter()
            for name in names:
                run_analysis(con, name)
            analyze.append(time.perf_counter() - started)
            con.close()
            con = duckdb.connect(str(db), read_only=True)
            started = time.perf_counter()
            for name in names:
                con.execute(f"SELECT * FROM xsp.{name}").fetchall()
            plain.append(time.perf_counter() - started)
            con.close()
    return {
        "convert": convert_s,
        "install": _median(install),
        "session": _median(session),
        "plain": _median(plain),
        "analyze": _median(analyze),
        "analyses": len(names),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print("| trace | convert (with install) s | install s | analyze session s | analyses | plain DuckDB, all s | analyze, all s |")
    print("|---|---|---|---|---|---|---|")
    for trace in args.traces:
        m = measure(trace, args.repeat)
        print(
            f"| {trace.name} | {m['convert']:.2f} | {m['install']:.2f} | {m['session']:.2f} | {m['analyses']:.0f} | "
            f"{m['plain']:.2f} | {m['analyze']:.2f} |"
        )


if __name__ == "__main__":
    main()
