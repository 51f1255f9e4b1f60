"""The benchmark table of BENCHMARKS.md: xsp-trace against the tools users would otherwise run,
side by side in one run, on the same files, each measurement a fresh process.

    python -m bench.peers        # Kineto 100M,1G,3G (HTA on 100M,1G); nsys x30,x290,x870; floors; cores; ~20 min
    python -m bench.peers --sizes 100M --nsys-copies 30 --summaries-copies 30 --cores-nsys-copies 30 \
        --cores-kineto-size 100M --no-write                              # quick look

Peers are found on PATH (nsys, nsys-ai) or named: --nsys-ai / XSP_BENCH_NSYS_AI (nsys-ai in a venv
of its own), --hta-python / XSP_BENCH_HTA_PYTHON (an interpreter with HolisticTraceAnalysis;
default: this one). The thresholds each run is judged on are in bench/peers/targets.json.

The peers doing the same job (bench/peers/same_job.py) are in the same run: nsys-ai `warm` and the
report set (convert + the analyses of every default `nsys stats` report and `nsys analyze` rule
vs nsys doing them) at --peers-copies, the Perfetto export vs Parquet at --parquet-copies, nsys-ai
pinned alike in the cores table; issue 27's targets are judged on them.

Inputs come from bench/peers/scaled_inputs.py (cached in bench/data/). Wall time is measured around
the child process, peak RSS is the child's ru_maxrss (os.wait4), so interpreter start-up and
imports count for every tool alike. Results go to bench/results/run-<time>.json and, unless
--no-write, replace the generated section of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from . import convert_per_mb, floors
from . import same_job as peers
from .children import PRELUDE, ROOT, log, measure, module_command, python_script
from .scaled_inputs import DATA, parse_size, scaled_kineto, scaled_nsys, size_label, uncompressed_bytes
from .targets import issue_12

RESULTS = ROOT / "bench" / "results"
BEGIN, END = "<!-- bench.peers: begin (generated, do not edit) -->", "<!-- bench.peers: end -->"


XSP_KINETO = (
    PRELUDE
    + """
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_inputs
from xsp_trace.store.opening import open_store as connect
from xsp_trace.resources import query_text
out = Path(sys.argv[2])
convert_inputs([Path(sys.argv[1])], out, ConvertOptions(), overwrite=True)
rows = connect(out).execute(query_text('analyses/top_kernels')).fetchall()
assert rows, 'no kernels'
"""
)

HTA = """
import logging, os, sys, tempfile
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
folder = tempfile.mkdtemp()
os.symlink(sys.argv[1], os.path.join(folder, 'rank.json.gz'))
ta = TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)
_, kernels = ta.get_gpu_kernel_breakdown(visualize=False)
assert len(kernels)
"""

PY_GUNZIP = """
import gzip, sys
with gzip.open(sys.argv[1], 'rb') as f:
    while f.read(1 << 20):
        pass
"""

XSP_NSYS = XSP_KINETO  # the same: convert, then the kernel summary

# A later summary on the converted database: what `xsp-trace analyze -a NAME` does (open the
# database read-only, load the SQL library, run the analysis), timed inside the process in two parts;
# the whole process is measured around it like nsys stats, which re-reads its export every report.
XSP_SUMMARY = (
    PRELUDE
    + """
import json, time
from pathlib import Path
start = time.perf_counter()
from xsp_trace.analyze.session import open_session, run_analysis
con = open_session(Path(sys.argv[1]))
opened = time.perf_counter()
rows = run_analysis(con, sys.argv[2]).rows
done = time.perf_counter()
print(json.dumps({"session_seconds": round(opened - start, 4), "query_seconds": round(done - opened, 4), "rows": len(rows)}))
"""
)
# Summaries with an analysis here and the matching `nsys stats` report: (analysis, report).
NSYS_SUMMARIES = (
    ("cuda_gpu_kern_sum", "gpukernsum"),
    ("cuda_api_sum", "cudaapisum"),
    ("nvtx_sum", "nvtxsum"),
    ("cuda_gpu_mem_time_sum", "gpumemtimesum"),
    ("cuda_gpu_mem_size_sum", "gpumemsizesum"),
    ("nvtx_gpu_projection", "nvtxgpuproj"),
)
SUMMARY_TIMEOUT_S = 180  # nsys stats nvtxgpuproj runs for many minutes on large exports; a stopped run is a lower bound
# Each later summary and its nsys stats report run this many times (fresh processes, alternating):
# they last a second or less, where one run's noise would decide a 20x verdict; the median counts.
SUMMARY_REPEATS = 3

MANY = (
    PRELUDE
    + """
from pathlib import Path
from xsp_trace.convert import ConvertOptions, convert_inputs
if __name__ == '__main__':
    inputs, out, fmt, jobs = [Path(p) for p in sys.argv[4:]], Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    engine, store = ('ray', 'parquet') if fmt == 'ray' else ('local', fmt)  # ray: a local Ray of the engine's own
    convert_inputs(inputs, out, ConvertOptions(), engine=engine, store=store, jobs=jobs, overwrite=True)
"""
)


def kineto_rows(sizes: list[int], hta_sizes: set[int]) -> list[dict]:
    rows = []
    for size in sizes:
        path = scaled_kineto(size)
        json_bytes = uncompressed_bytes(path)
        row = {"input": f"Kineto A100 {size_label(size)}", "json_bytes": json_bytes, "gzip_bytes": path.stat().st_size}
        log(f"{row['input']}: floors")
        row["floor_gzip_cli"] = measure(["sh", "-c", f"gzip -dc '{path}' > /dev/null"])
        row["floor_python_gzip"] = measure(python_script(PY_GUNZIP, path))
        log(f"{row['input']}: xsp-trace")
        out = DATA / f"_bench_kineto_{size_label(size)}.duckdb"
        row["xsp"] = measure(python_script(XSP_KINETO, path, out))
        row["spans"] = _count_spans(out)
        row["database"] = str(out)  # the floors' writing part copies it; removed after them
        if size in hta_sizes:
            log(f"{row['input']}: HTA")
            row["hta"] = measure(python_script(HTA, path, python=peers.hta_python()))
        rows.append(row)
    return rows


def _count_spans(database: Path) -> int:
    import duckdb

    with duckdb.connect(str(database), read_only=True) as con:
        return con.execute("SELECT count(*) FROM spans").fetchone()[0]


def nsys_rows(copies_list: list[int], summaries_for: set[int], peers_for: set[int], parquet_for: set[int]) -> list[dict]:
    nsys = shutil.which("nsys")
    rows = []
    for copies in copies_list:
        path = scaled_nsys(copies)
        import sqlite3

        with sqlite3.connect(path) as con:
            kernels = con.execute("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
        row = {"input": f"nsys H100 x{copies}", "sqlite_bytes": path.stat().st_size, "kernels": kernels}
        log(f"{row['input']}: xsp-trace")
        out = DATA / f"_bench_nsys_x{copies}.duckdb"
        row["xsp"] = measure(python_script(XSP_NSYS, path, out))
        row["spans"] = _count_spans(out)
        row["database"] = str(out)
        if nsys:
            log(f"{row['input']}: nsys stats")
            row["nsys_stats"] = measure(nsys_stats(nsys, "gpukernsum", path))
        row["summaries"] = summary_rows(path, out, nsys) if copies in summaries_for else []
        if copies in peers_for and peers.nsys_ai_path():
            log(f"{row['input']}: nsys-ai warm")
            row["nsys_ai"] = peers.nsys_ai_warm(path)
        if copies in peers_for and nsys:
            row["report_set"] = peers.report_set(path, DATA / f"_bench_report_set_x{copies}.duckdb", nsys)
        if copies in parquet_for:
            row["perfetto_parquet"] = peers.perfetto_parquet(out)
        rows.append(row)
    return rows


def nsys_stats(nsys: str, report: str, export: Path) -> list[str]:
    """The peer's command: one report of `nsys stats` on an existing SQLite export (not re-exported)."""
    return [nsys, "stats", "--report", report, "--format", "csv", "--force-export", "false", str(export)]


def summary_rows(export: Path, database: Path, nsys: str | None) -> list[dict]:
    """Each later summary: `xsp-trace analyze -a NAME` on the converted database (whole process, and
    the analysis's own query time) vs the matching nsys stats report (whole process), each
    SUMMARY_REPEATS times in turn (a report that ran past the timeout is not repeated); the row
    keeps the median run of each side and the range of the query and report times."""
    rows = []
    for module, report in NSYS_SUMMARIES:
        log(f"{export.name}: {module} vs nsys stats {report}")
        ours, theirs = [], []
        for _ in range(SUMMARY_REPEATS):
            whole = measure(python_script(XSP_SUMMARY, database, module), stdout=subprocess.PIPE)
            ours.append({"xsp": whole, **json.loads(whole.pop("stdout").strip().splitlines()[-1])})
            if nsys and not any(s.get("timed_out") for s in theirs):
                theirs.append(measure(nsys_stats(nsys, report, export), timeout=SUMMARY_TIMEOUT_S))
        row = {"module": module, "report": report, **median_run(ours, "query_seconds"), "query_range": spread(ours, "query_seconds")}
        if theirs:
            row |= {"nsys_stats": median_run(theirs, "seconds"), "nsys_stats_range": spread(theirs, "seconds")}
        rows.append(row)
    return rows


def median_run(runs: list[dict], key: str) -> dict:
    """The run with the median `key` (the lower middle one of an even count)."""
    return sorted(runs, key=lambda r: r[key])[(len(runs) - 1) // 2]


def spread(runs: list[dict], key: str) -> list[float]:
    """[lowest, highest] `key` of the runs."""
    return [min(r[key] for r in runs), max(r[key] for r in runs)]


def cores_rows(nsys_copies: int | None, kineto_size: int | None) -> list[dict]:
    """The same conversions pinned to 1 core and to every core (taskset; xsp-trace gives DuckDB as
    many threads as it may use), with nsys stats pinned alike: how the ratio moves with cores."""
    cores = sorted(os.sched_getaffinity(0))
    nsys = shutil.which("nsys")
    out = DATA / "_bench_cores.duckdb"
    rows = []
    for count in sorted({1, len(cores)}):
        pin = ["taskset", "-c", ",".join(map(str, cores[:count]))]
        if nsys_copies:
            path = scaled_nsys(nsys_copies)
            log(f"cores={count}: nsys x{nsys_copies}")
            row = {"input": f"nsys H100 x{nsys_copies}", "cores": count, "xsp": measure(pin + python_script(XSP_NSYS, path, out))}
            if nsys:
                row["peer"], row["peer_name"] = measure(pin + nsys_stats(nsys, "gpukernsum", path)), "nsys stats gpukernsum"
            if peers.nsys_ai_path():
                row["nsys_ai"] = peers.nsys_ai_warm(path, pin)
            out.unlink(missing_ok=True)
            rows.append(row)
        if kineto_size:
            path = scaled_kineto(kineto_size)
            log(f"cores={count}: Kineto {size_label(kineto_size)}")
            rows.append(
                {"input": f"Kineto A100 {size_label(kineto_size)}", "cores": count, "xsp": measure(pin + python_script(XSP_KINETO, path, out))}
            )
            out.unlink(missing_ok=True)
    return rows


def perfetto_rows(database: Path) -> list[dict]:
    rows = []
    for which in ("xsp", "peer"):
        log(f"perfetto export ({which}) of {database.name}")
        output = DATA / f"_bench.{which}.pftrace"
        start = time.perf_counter()
        proc = subprocess.run(
            module_command("bench.peers.perfetto_export", "--child", which, database, output), check=True, capture_output=True, text=True
        )
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        result["wall_seconds"] = round(time.perf_counter() - start, 3)
        output.unlink(missing_ok=True)
        rows.append({"tool": which, **result})
    return rows


def many_rows(inputs: list[Path]) -> list[dict]:
    rows = []
    for fmt, jobs in (("duckdb", 1), ("duckdb", 0), ("parquet", 0), ("ray", 0)):
        jobs = jobs or (len(os.sched_getaffinity(0)))
        out = DATA / ("_bench_many.duckdb" if fmt == "duckdb" else "_bench_many_parquet")
        log(f"{len(inputs)} inputs -> {fmt}, {jobs} jobs")
        rows.append({"format": fmt, "jobs": jobs, **measure(python_script(MANY, out, fmt, jobs, *inputs))})
        if out.is_dir():
            shutil.rmtree(out)
        else:
            out.unlink(missing_ok=True)
    return rows


def machine() -> dict:
    mem = next((int(line.split()[1]) for line in open("/proc/meminfo") if line.startswith("MemTotal")), 0)
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), platform.processor())
    import duckdb

    hta_version = subprocess.run(
        [peers.hta_python(), "-c", "import importlib.metadata as m; print(m.version('HolisticTraceAnalysis'))"], capture_output=True, text=True
    ).stdout.strip()
    nsys = shutil.which("nsys")
    nsys_version = subprocess.run([nsys, "--version"], capture_output=True, text=True).stdout.strip() if nsys else None
    return {
        "cpu": cpu,
        "cores": len(os.sched_getaffinity(0)),
        "mem_gib": round(mem / 2**20, 1),
        "python": platform.python_version(),
        "duckdb": duckdb.__version__,
        "hta": hta_version,
        "nsys": nsys_version,
        "nsys_ai": peers.nsys_ai_version(),
        "load_before": os.getloadavg(),
    }


def _r(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def _range(span: list[float] | None) -> str:
    return f"{span[0]:.3f}-{span[1]:.3f}" if span else "-"


def markdown(result: dict) -> str:
    m = result["machine"]
    out = [
        BEGIN,
        "",
        f"Generated by `{result['command']}` on {result['date']} "
        f"({result['total_seconds'] / 60:.1f} min). Machine: {m['cpu']}, {m['cores']} cores, {m['mem_gib']} GiB; "
        f"Python {m['python']}, DuckDB {m['duckdb']}, HTA {m['hta']}, {m['nsys']}, nsys-ai {m.get('nsys_ai')}; load average before "
        f"{m['load_before'][0]:.2f}, after {result['load_after'][0]:.2f}. One measurement per cell (the later summaries: the median of {SUMMARY_REPEATS}; the Perfetto-vs-Parquet jobs: the median of "
        f"{peers.perfetto_vs_parquet.ROUNDS} alternating rounds), each a fresh process; "
        "peak RSS = the process's ru_maxrss.",
        "",
    ]
    k = result["kineto"]
    if k:
        out += [
            "### Kineto -> DuckDB + kernel breakdown vs Holistic Trace Analysis (load + kernel breakdown)",
            "",
            "| input | JSON MB | spans | floor: gzip -dc s | floor: Python gzip read s | xsp-trace s | xsp-trace MB/s | "
            "xsp / floor | HTA s | HTA / xsp (time) | xsp-trace peak MiB | HTA peak MiB | xsp / HTA (RSS) |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in k:
            floor = min(r["floor_gzip_cli"]["seconds"], r["floor_python_gzip"]["seconds"])
            x, h = r["xsp"], r.get("hta")
            out.append(
                f"| {r['input']} | {r['json_bytes'] / 1e6:,.0f} | {r['spans']:,} | {r['floor_gzip_cli']['seconds']:.2f} | "
                f"{r['floor_python_gzip']['seconds']:.2f} | {x['seconds']:.1f} | {r['json_bytes'] / 1e6 / x['seconds']:.0f} | "
                f"{_r(x['seconds'], floor)} | {h['seconds'] if h else '-'} | {_r(h['seconds'], x['seconds']) if h else '-'} | "
                f"{x['peak_mib']:.0f} | {h['peak_mib'] if h else '-'} | {_r(x['peak_mib'], h['peak_mib']) if h else '-'} |"
            )
        base = k[0]["xsp"]["peak_mib"]
        out += [
            "",
            "Peak RSS of the conversion across input sizes (vs the smallest): "
            + ", ".join(f"{r['input'].split()[-1]}: {r['xsp']['peak_mib']:.0f} MiB ({(r['xsp']['peak_mib'] / base - 1) * 100:+.0f} %)" for r in k),
            "",
        ]
    n = result["nsys"]
    if n:
        out += [
            "### nsys SQLite export -> DuckDB + kernel summary vs `nsys stats --report gpukernsum`",
            "",
            "| input | SQLite MB | kernels | spans | xsp-trace s | nsys stats s | xsp / nsys stats (time) | xsp-trace peak MiB | nsys stats peak MiB |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in n:
            x, s = r["xsp"], r.get("nsys_stats")
            out.append(
                f"| {r['input']} | {r['sqlite_bytes'] / 1e6:,.0f} | {r['kernels']:,} | {r['spans']:,} | {x['seconds']:.1f} | "
                f"{s['seconds'] if s else '-'} | {_r(x['seconds'], s['seconds']) if s else '-'} | {x['peak_mib']:.0f} | "
                f"{s['peak_mib'] if s else '-'} |"
            )
        out.append("")
        if any(r.get("summaries") for r in n):
            out += [
                "Later summaries on the converted database: `xsp-trace analyze -a NAME` as a whole process (open, SQL library, "
                "query; the query alone in brackets) vs the matching `nsys stats` report as a whole process (it re-reads the export); "
                f"each side run {SUMMARY_REPEATS} times in turn, the median shown, the range of the query and report times in the last column:",
                "",
                "| input | analysis | rows | xsp-trace s (query s) | nsys stats report | nsys stats s | nsys stats / xsp (whole) | nsys stats / xsp (query) | range: query s; nsys stats s |",
                "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | --- |",
            ]
            for r in n:
                for q in r.get("summaries", []):
                    s = q.get("nsys_stats")
                    more = ">" if s and s.get("timed_out") else ""
                    out.append(
                        f"| {r['input']} | {q['module']} | {q['rows']:,} | {q['xsp']['seconds']:.2f} ({q['query_seconds']:.3f}) | "
                        f"{q['report']} | {more}{s['seconds'] if s else '-'} | {more}{_r(s['seconds'], q['xsp']['seconds']) if s else '-'} | "
                        f"{more}{_r(s['seconds'], q['query_seconds']) if s else '-'} | {_range(q.get('query_range'))}; {_range(q.get('nsys_stats_range'))} |"
                    )
            out.append("")
    c = result.get("cores")
    if c:
        out += [
            "### Cores: the same conversion pinned to 1 core and to all cores (taskset; the peer pinned alike)",
            "",
            "| input | cores | xsp-trace s | xsp-trace peak MiB | peer | peer s | xsp / peer (time) | speed-up vs 1 core | "
            "nsys-ai warm s | xsp / nsys-ai (time) | nsys-ai speed-up vs 1 core |",
            "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in c:
            one = next(o for o in c if o["input"] == r["input"] and o["cores"] == 1)
            peer = r.get("peer")
            out.append(
                f"| {r['input']} | {r['cores']} | {r['xsp']['seconds']:.1f} | {r['xsp']['peak_mib']:.0f} | {r.get('peer_name', '-')} | "
                f"{peer['seconds'] if peer else '-'} | {_r(r['xsp']['seconds'], peer['seconds']) if peer else '-'} | "
                f"{_r(one['xsp']['seconds'], r['xsp']['seconds'])} | " + _cores_ai(r, one)
            )
        out.append("")
    out += peers.markdown(n)
    out += issue_12(result)
    if issue27 := peers.targets(result):
        out += [
            "### Targets of issue 27 (the peers doing the same job), judged on this run",
            "",
            "| target | this run | verdict |",
            "| --- | --- | --- |",
        ]
        out += [f"| {t} | {m} | {v} |" for t, m, v in issue27] + [""]
    out += floors.markdown(result.get("floors", []))
    if result.get("per_mb"):
        out += convert_per_mb.markdown(result["per_mb"])
    p = result["perfetto"]
    if p:
        out += [
            f"### Perfetto export of {result['perfetto_input']}",
            "",
            "| exporter | slices | seconds | slices/s | bytes/slice | peak MiB |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in p:
            name = "xsp-trace perfetto (streamed, interned, flows)" if r["tool"] == "xsp" else "TraceProtoBuilder (in memory, no flows)"
            out.append(
                f"| {name} | {r['slices']:,} | {r['seconds']:.1f} | {r['slices'] / r['seconds']:,.0f} | "
                f"{r['bytes'] / r['slices']:.1f} | {r['peak_mb']:.0f} |"
            )
        out.append("")
    many = result["many"]
    if many:
        out += [
            f"### Many traces: {result['many_inputs']}",
            "",
            "| output | jobs | seconds | peak MiB (largest process) |",
            "| --- | ---: | ---: | ---: |",
        ]
        for r in many:
            output = "parquet via --engine ray (local Ray, start-up included)" if r["format"] == "ray" else r["format"]
            out.append(f"| {output} | {r['jobs']} | {r['seconds']:.1f} | {r['peak_mib']:.0f} |")
        out.append("")
    out.append(END)
    return "\n".join(out)


def _cores_ai(row: dict, one: dict) -> str:
    ai = row.get("nsys_ai")
    if not ai:
        return "- | - | - |"
    return f"{ai['seconds']:.1f} | {_r(row['xsp']['seconds'], ai['seconds'])} | {_r(one['nsys_ai']['seconds'], ai['seconds'])} |"


def write_benchmarks(section: str) -> None:
    path = ROOT / "BENCHMARKS.md"
    text = path.read_text()
    if BEGIN in text and END in text:
        text = text[: text.index(BEGIN)] + section + text[text.index(END) + len(END) :]
    else:
        marker = "\n## "
        at = text.index(marker) if marker in text else len(text)
        text = text[:at] + "\n## Against the peers (python -m bench.peers)\n\n" + section + "\n" + text[at:]
    path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100M,1G,3G", help="Kineto JSON sizes")
    parser.add_argument("--hta-sizes", default="100M,1G", help="the Kineto sizes HTA is run on too (HTA needs ~6 GB per GB of JSON)")
    parser.add_argument("--nsys-copies", default="30,290,870", help="growth factors of the H100 nsys export (x290 = 1 M kernels)")
    parser.add_argument("--summaries-copies", default="290", help="the nsys sizes the later summaries are compared on")
    parser.add_argument("--peers-copies", default="290", help="the nsys sizes nsys-ai warm and the report set are compared on")
    parser.add_argument("--parquet-copies", default="30,290", help="the nsys sizes the Perfetto export is compared with Parquet on")
    parser.add_argument("--cores-nsys-copies", type=int, default=290, help="nsys size for the cores table (0: none)")
    parser.add_argument("--cores-kineto-size", default="1G", help="Kineto size for the cores table ('' : none)")
    parser.add_argument("--skip-hta", action="store_true")
    parser.add_argument("--hta-python", default=os.environ.get("XSP_BENCH_HTA_PYTHON"), help="Python with HolisticTraceAnalysis (default: this one)")
    parser.add_argument(
        "--nsys-ai", default=os.environ.get("XSP_BENCH_NSYS_AI"), help="the nsys-ai command (default: the one on PATH; none: no nsys-ai rows)"
    )
    parser.add_argument("--no-write", action="store_true", help="do not update BENCHMARKS.md")
    parser.add_argument("--no-many", action="store_true", help="skip the many-traces table")
    parser.add_argument("--no-per-mb", action="store_true", help="skip seconds per MB over every trace in tests/data")
    parser.add_argument("--from-json", type=Path, help="only render (and write) the section of a saved bench/results/run-*.json")
    args = parser.parse_args()
    peers.use(hta_python=args.hta_python, nsys_ai=args.nsys_ai)
    if args.from_json:
        section = markdown(json.loads(args.from_json.read_text()))
        print(section)
        if not args.no_write:
            write_benchmarks(section)
        return
    DATA.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    result = {"command": "python -m bench.peers " + " ".join(sys.argv[1:]), "date": time.strftime("%Y-%m-%d %H:%M"), "machine": machine()}
    sizes = [parse_size(s) for s in args.sizes.split(",") if s]
    copies = [int(c) for c in args.nsys_copies.split(",") if c]
    hta_sizes = set() if args.skip_hta else {parse_size(s) for s in args.hta_sizes.split(",") if s}
    result["kineto"] = kineto_rows(sizes, hta_sizes)
    sets = [{int(c) for c in text.split(",") if c} for text in (args.summaries_copies, args.peers_copies, args.parquet_copies)]
    result["nsys"] = nsys_rows(copies, *sets)
    result["floors"] = floors.rows_for(result)
    result["perfetto"], result["perfetto_input"] = [], None
    if result["nsys"]:
        smallest = Path(result["nsys"][0]["database"])
        result["perfetto"], result["perfetto_input"] = perfetto_rows(smallest), f"the converted {result['nsys'][0]['input']}"
    many_inputs = [scaled_nsys(copies[0]) for _ in range(1)] if copies else []
    if sizes:
        many_inputs = [scaled_kineto(sizes[0])] * 2 + many_inputs * 2
    result["many_inputs"] = " + ".join(p.name for p in many_inputs)
    result["many"] = many_rows(many_inputs) if len(many_inputs) > 1 and not args.no_many else []
    for r in result["nsys"] + result["kineto"]:
        Path(r.pop("database")).unlink(missing_ok=True)
    cores_kineto = parse_size(args.cores_kineto_size) if args.cores_kineto_size else None
    result["per_mb"] = None if args.no_per_mb else convert_per_mb.rows()
    result["cores"] = cores_rows(args.cores_nsys_copies or None, cores_kineto) if len(os.sched_getaffinity(0)) > 1 else []
    result["total_seconds"] = round(time.perf_counter() - t0, 1)
    result["load_after"] = os.getloadavg()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"run-{stamp}.json").write_text(json.dumps(result, indent=1))
    section = markdown(result)
    print(section)
    if not args.no_write:
        write_benchmarks(section)


if __name__ == "__main__":
    main()
