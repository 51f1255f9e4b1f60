"""The Perfetto export against DuckDB writing the same spans as Parquet, at 100 k and 1 M kernels.

Inputs: the PyTorch 2xH100 nsys export grown 30-fold (~100 k kernels) and 290-fold (~1 M kernels)
by bench/peers/scaled_inputs.py, converted with `xsp_trace.convert` (both cached in bench/data/).
Every measurement runs in a fresh child process: wall time of the job alone, peak RSS from
getrusage(RUSAGE_SELF).ru_maxrss at its end. The jobs run in alternating rounds (ROUNDS): a cell's
seconds are the median of its rounds, its peak the largest (the same job varies 1.5x between
minutes on this machine, the Parquet peer too). Rows, in the same run, per input:

- parquet (peer): DuckDB's `COPY (SELECT * FROM spans) TO ... (FORMAT parquet)` -- the same spans;
- parquet of perfetto/slices (floor): the export's own queries (joins for flows, kernel, memop
  and attribution details, sorted by track and start) written by DuckDB as Parquet -- what the
  export costs before a single packet is encoded;
- xsp-trace perfetto: `export_perfetto` (columnar encoder, xsp_trace/perfetto/slice_encoder.py).

Targets (issue 27, bench/peers/targets.json): export <= 3x the Parquet peer's time, peak <= 400 MiB,
linear from 100 k to 1 M kernels (seconds per slice at 1 M within 1.25x of that at 100 k).

    python -m bench.peers.perfetto_vs_parquet --copies 30,290
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from .children import measure as measure_child
from .children import module_command
from .scaled_inputs import DATA, scaled_nsys
from .targets import ISSUE_27

TIME_TARGET = ISSUE_27["perfetto_vs_parquet_time"]
PEAK_TARGET_MIB = ISSUE_27["perfetto_peak_mib"]
LINEAR_TOLERANCE = ISSUE_27["perfetto_linear_tolerance"]
ROUNDS = 3  # alternating rounds of the jobs per input (a cell: the median)


def database_for(copies: int) -> Path:
    """The H100 nsys export grown `copies`-fold and converted (cached in bench/data/)."""
    from xsp_trace.convert import ConvertOptions, convert_files

    database = DATA / f"nsys_h100_x{copies}.duckdb"
    if not database.exists():
        convert_files([scaled_nsys(copies)], database, ConvertOptions())
    return database


def _parquet(database: Path, output: Path, query: str | None) -> dict:
    import duckdb

    from xsp_trace.perfetto.export import PerfettoOptions, _select, slice_parts
    from xsp_trace.resources import query_text
    from xsp_trace.store.sql import set_variables

    con = duckdb.connect(str(database), read_only=True)
    con.execute("SET enable_progress_bar = false")
    if query is None:
        con.execute(f"COPY (SELECT * FROM spans) TO '{output}' (FORMAT parquet)")
    else:  # the export's query over each run whole (one part per run), one file per run
        _select(con, PerfettoOptions())
        parts = slice_parts(con, PerfettoOptions(part_rows=1 << 62))
        output.mkdir()
        for run_id, part_first, part_last in parts:
            set_variables(con, {"xsp_perfetto_part_run": run_id, "xsp_perfetto_part_first": part_first, "xsp_perfetto_part_last": part_last})
            con.execute(f"COPY ({query_text(query).strip().rstrip(';')}) TO '{output / f'run{run_id}.parquet'}' (FORMAT parquet)")
            # the part's kernel and memop columns and its args come from queries of their own
            for extra in ("slice_part_details", "slice_part_args"):
                con.execute(
                    f"COPY ({query_text('perfetto/' + extra).strip().rstrip(';')}) TO '{output / f'{extra}_run{run_id}.parquet'}' (FORMAT parquet)"
                )
    pattern = output if query is None else output / "run*.parquet"
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{pattern}')").fetchone()[0]
    con.close()
    return {"slices": rows}


def _export(database: Path, output: Path) -> dict:
    from xsp_trace.perfetto import export_perfetto
    from xsp_trace.process_heap import keep_heap

    with keep_heap():  # as `xsp-trace perfetto` runs it (cli_options.write_perfetto)
        stats = export_perfetto(database, output)
    return {"slices": stats.slices, "flows": stats.flows}


JOBS = {
    "parquet": ("DuckDB COPY spans TO parquet (peer)", lambda db, out: _parquet(db, out, None)),
    "parquet_slices": ("DuckDB COPY perfetto/slices query TO parquet (floor)", lambda db, out: _parquet(db, out, "perfetto/slices")),
    "export": ("xsp-trace perfetto (columnar)", _export),
}


def child(which: str, database: Path, output: Path) -> None:
    t0 = time.perf_counter()
    result = JOBS[which][1](database, output)
    seconds = time.perf_counter() - t0
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = sum(p.stat().st_size for p in output.iterdir()) if output.is_dir() else output.stat().st_size
    print(json.dumps({**result, "seconds": seconds, "peak_mib": peak_mib, "bytes": size}))


def measure(which: str, database: Path) -> dict | None:
    """One job in a fresh child, started through children.py's small launcher: a child spawned
    straight from this process would start from this process's peak RSS (Linux keeps the
    high-water mark across exec), which grows when this process converted the databases itself."""
    output = DATA / f"{database.stem}.{which}.out"
    argv = module_command("bench.peers.perfetto_vs_parquet", "--child", which, database, output)
    try:
        done = measure_child(argv, stdout=subprocess.PIPE)
    except SystemExit as failed:
        print(f"{which} on {database.name} failed: {str(failed).strip().splitlines()[-1]}", file=sys.stderr, flush=True)
        return None
    finally:
        shutil.rmtree(output) if output.is_dir() else output.unlink(missing_ok=True)
    return json.loads(done["stdout"].strip().splitlines()[-1])


def measure_rounds(jobs: list[str], database: Path, rounds: int = ROUNDS, log=None) -> dict[str, dict]:
    """Each job `rounds` times, the jobs alternating: {job: its median round, with every round's
    seconds ("rounds_seconds") and the largest peak}."""
    runs: dict[str, list[dict]] = {job: [] for job in jobs}
    for _ in range(rounds):
        for job in jobs:
            if log:
                log(f"{database.name}: {JOBS[job][0]}")
            result = measure(job, database)
            if result is not None:
                runs[job].append(result)
    out = {}
    for job, done in runs.items():
        if done:
            median = sorted(done, key=lambda r: r["seconds"])[len(done) // 2]
            out[job] = {**median, "rounds_seconds": [round(r["seconds"], 3) for r in done], "peak_mib": max(r["peak_mib"] for r in done)}
    return out


def verdicts(results: dict[int, dict[str, dict]]) -> list[tuple[str, str, str]]:
    lines = []
    results = {c: r for c, r in results.items() if "export" in r and "parquet" in r}
    for copies, r in results.items():
        ratio = r["export"]["seconds"] / r["parquet"]["seconds"]
        lines.append((f"x{copies}: export <= {TIME_TARGET:g}x Parquet peer", f"{ratio:.2f}x", "PASS" if ratio <= TIME_TARGET else "MISS"))
        peak = r["export"]["peak_mib"]
        lines.append((f"x{copies}: peak <= {PEAK_TARGET_MIB} MiB", f"{peak:.0f} MiB", "PASS" if peak <= PEAK_TARGET_MIB else "MISS"))
    if len(results) >= 2:
        small, large = min(results), max(results)
        per_slice = [results[c]["export"]["seconds"] / results[c]["export"]["slices"] for c in (small, large)]
        growth = per_slice[1] / per_slice[0]
        verdict = "PASS" if growth <= LINEAR_TOLERANCE else "MISS"
        lines.append((f"linear x{small} -> x{large} (s/slice within {LINEAR_TOLERANCE}x)", f"{growth:.2f}x", verdict))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--copies", default="30,290", help="growth factors of the H100 nsys fixture (30: ~100 k kernels, 290: ~1 M)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="alternating rounds of the jobs (a cell: the median)")
    parser.add_argument("--child", nargs=3, metavar=("WHICH", "DB", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], Path(args.child[1]), Path(args.child[2]))
        return
    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} ({os.cpu_count()} cores)", flush=True)
    print("| input | kernels | job | rows | seconds, median (each round) | x peer | peak MiB | output MB |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    results: dict[int, dict[str, dict]] = {}
    for copies in (int(c) for c in args.copies.split(",")):
        database = database_for(copies)
        import duckdb

        with duckdb.connect(str(database), read_only=True) as con:
            kernels = con.execute("SELECT count(*) FROM kernels").fetchone()[0]
        jobs = ["parquet", "parquet_slices", "export"]
        results[copies] = measure_rounds(jobs, database, args.rounds)
        for which, r in results[copies].items():
            ratio = r["seconds"] / results[copies]["parquet"]["seconds"] if "parquet" in results[copies] else float("nan")
            print(
                f"| nsys H100 x{copies} | {kernels:,} | {JOBS[which][0]} | {r['slices']:,} | {r['seconds']:.2f} "
                f"({', '.join(f'{x:.2f}' for x in r['rounds_seconds'])}) | {ratio:.2f} | {r['peak_mib']:.0f} | {r['bytes'] / 1e6:.1f} |",
                flush=True,
            )
    print(f"\nload average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n")
    print("| target | measured | verdict |")
    print("| --- | ---: | --- |")
    for target, measured, verdict in verdicts(results):
        print(f"| {target} | {measured} | {verdict} |")


if __name__ == "__main__":
    main()
