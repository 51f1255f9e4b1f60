"""The `xsp-trace` command line: thin Typer wrappers over the library."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import typer

from . import __version__
from .cli_database import install_analyses_command, metrics
from .cli_diff import diff
from .cli_options import (
    CSV_SAFE_HELP,
    INT32_MAX,
    JOBS,
    NESTING_LEVEL,
    PEAK,
    QUERY_MEMORY_LIMIT,
    RUN_ID_OFFSET,
    RUN_SECONDS,
    SECONDS,
    TIME_NS,
    WHOLE,
    Engine,
    OneLineErrors,
    OutputFormat,
    ProgressReporter,
    Scope,
    StoreFormat,
    comma_list,
    iteration_list,
    memory_size,
    output_path,
    readable_database,
    say,
    state,
    time_window,
    write_perfetto,
)
from .errors import InputError
from .output_files import Interrupted, check_output_path, install_signal_handlers, received_signal, refuse_inputs
from .store.data_only import remove_spill_folders

app = typer.Typer(
    name="xsp-trace",
    cls=OneLineErrors,
    help=(
        "Across-stack profiling of ML models on GPUs: model -> layer -> op -> CUDA API -> kernel "
        "in one DuckDB schema and one Perfetto timeline.\n\n"
        "Example:\n\n"
        "  xsp-trace convert run.nsys-rep -o run.duckdb\n\n"
        '  xsp-trace query run.duckdb "select kind, count(*) from spans group by kind"\n\n'
        "  xsp-trace analyze run.duckdb --report report.html"
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"xsp-trace {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    ctx: typer.Context,
    debug: bool = typer.Option(False, "--debug", help="Show the full traceback on errors."),
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
) -> None:
    state["debug"] = debug
    # A command's DuckDB connections are closed when it returns: their spill folder goes with it.
    ctx.call_on_close(remove_spill_folders)


@app.command()
def convert(
    inputs: list[Path] = typer.Argument(
        ..., help="Traces: .nsys-rep, nsys .sqlite exports, PyTorch profiler .json[.gz], or capture run directories."
    ),
    output: Path | None = typer.Option(
        None, "-o", "--output", parser=output_path, help="DuckDB database to write (default: beside the first input, .duckdb)."
    ),
    append: bool = typer.Option(False, "--append", help="Add the runs to an existing database."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing database."),
    nsys: str | None = typer.Option(None, "--nsys", help="nsys binary for .nsys-rep inputs (default: $NSYS, then PATH)."),
    label: str | None = typer.Option(None, "--label", help="Label stored with each run."),
    python_functions: bool = typer.Option(False, "--python-functions", help="Keep Kineto python_function events (off by default, as in HTA)."),
    perfetto: Path | None = typer.Option(
        None, "--perfetto", parser=output_path, help="Also write every run of the database as a Perfetto trace (.pftrace) for ui.perfetto.dev."
    ),
    step_ranges: str | None = typer.Option(
        None,
        "--step-ranges",
        metavar="REGEX",
        help="The ranges (NVTX, annotations) whose name matches REGEX are the steps, for traces without ProfilerStep#N; "
        "iteration: the first integer in the name, else the order (default: ProfilerStep#N in any category).",
    ),
    one_execution: bool = typer.Option(
        False,
        "--one-execution",
        help="The two inputs (an nsys report or export, then a PyTorch profiler trace) recorded one execution: one run, on one clock, each span once (docs/two_profilers.md).",
    ),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress bar."),
    jobs: int | None = typer.Option(None, "-j", "--jobs", callback=JOBS, help="Inputs converted at once, one process each (default: one per core)."),
    out_format: StoreFormat = typer.Option(
        StoreFormat.duckdb, "--format", help="duckdb (one database file) or parquet (a folder partitioned by run, for many traces)."
    ),
    engine: Engine = typer.Option(
        Engine.local, "--engine", help="local: worker processes on this machine (-j); ray: one Ray Data task per trace, into a Parquet dataset."
    ),
    ray_address: str | None = typer.Option(
        None,
        "--ray-address",
        help="With --engine ray: the cluster to join (default: $RAY_ADDRESS, else a local Ray of its own, stopped at the end; auto: the one ray start began).",
    ),
    run_id_offset: int = typer.Option(
        0,
        "--run-id-offset",
        callback=RUN_ID_OFFSET,
        help="With --engine ray: number the runs from OFFSET+1, in input order (several jobs sharing one dataset).",
    ),
    max_gzip_ratio: float | None = typer.Option(
        None,
        "--max-gzip-ratio",
        help="Stop when a .gz trace gives more bytes than this many per compressed byte read, from 64 MiB on (default 100, or $XSP_MAX_GZIP_RATIO; 0 = no limit).",
    ),
    max_input_size: str | None = typer.Option(
        None,
        "--max-input-size",
        help="Stop when a .gz trace decompresses, or a pipe runs, past this size (default 64GB, or $XSP_MAX_INPUT_SIZE; 0 = no limit).",
    ),
) -> None:
    """Convert traces into one DuckDB database (one run per trace), or a Parquet dataset.

    Example:

      xsp-trace convert run.nsys-rep -o run.duckdb

      xsp-trace convert rank0.json.gz rank1.json.gz run.sqlite -o all.duckdb

      xsp-trace convert run.nsys-rep -o run.duckdb --perfetto run.pftrace

      xsp-trace convert ranks/*.json.gz --format parquet -o ranks_dataset -j 8

      xsp-trace convert ranks/*.json.gz --engine ray -o ranks_dataset --run-id-offset 0

    The same queries run over either: xsp-trace query ranks_dataset @queries/analyses/top_kernels.sql

    A trace that decompresses too far stops with one line (docs/robustness.md, Limits); a real one past them:

      xsp-trace convert huge.json.gz -o huge.duckdb --max-gzip-ratio 500 --max-input-size 200GB

    A trace recorded without ProfilerStep#N ranges, its steps named by NVTX ranges "train_step 0", "train_step 1"...:

      xsp-trace convert run.nsys-rep -o run.duckdb --step-ranges '^train_step'
    """
    from .convert import ConvertOptions, convert_inputs, default_output
    from .convert.input_limits import InputLimits
    from .convert.step_ranges import check_step_ranges

    if run_id_offset + len(inputs) > INT32_MAX:
        raise InputError(None, f"--run-id-offset {run_id_offset} numbers runs past {INT32_MAX}, the largest run id", "use a smaller offset")
    if output is None:
        output = default_output(inputs[0], dataset=out_format is StoreFormat.parquet or engine is Engine.ray)
    limits = InputLimits.from_env(max_gzip_ratio, max_input_size)
    options = ConvertOptions(
        nsys=nsys, label=label, include_python_functions=python_functions, limits=limits, step_ranges=check_step_ranges(step_ranges)
    )
    if perfetto is not None:  # refused before converting, not after
        check_output_path(perfetto)
        refuse_inputs(perfetto, [*inputs, output])
    if one_execution and (engine is not Engine.local or out_format is not StoreFormat.duckdb):
        raise InputError(None, "--one-execution writes one DuckDB database in this process", "leave out --engine and --format")
    with ProgressReporter(enabled=not quiet and sys.stderr.isatty()) as progress:
        if one_execution:
            from .convert.one_execution import convert_one_execution_files

            run_ids = convert_one_execution_files(list(inputs), output, options, append=append, overwrite=overwrite, progress=progress)
        else:
            run_ids = convert_inputs(
                list(inputs),
                output,
                options,
                engine=engine.value,
                store=out_format.value,
                jobs=jobs,
                append=append,
                overwrite=overwrite,
                ray_address=ray_address,
                run_id_offset=run_id_offset,
                progress=progress,
            )
    typer.echo(f"wrote {output} (runs {', '.join(map(str, run_ids))})")
    if perfetto is not None:
        write_perfetto(output, perfetto, None)


@app.command()
def perfetto(
    database: Path = typer.Argument(..., help="xsp-trace database written by convert, or a raw trace (converted once into .xsp-cache/)."),
    output: Path = typer.Option(..., "-o", "--output", parser=output_path, help="Perfetto trace to write (.pftrace)."),
    runs: str | None = typer.Option(None, "--runs", help="Comma-separated run ids (default: every run)."),
    kinds: str | None = typer.Option(
        None,
        "--kinds",
        help="Comma-separated span kinds to keep (model, layer, op, annotation, api, kernel, memcpy, memset, sync, other), plus mark, counter, cpu_sample and thread_state. Default: all.",
    ),
    from_ns: int | None = typer.Option(
        None,
        "--from-ns",
        callback=TIME_NS,
        help="Window start: ns after each run's time 0 (--align). Spans overlapping the window are kept.",
    ),
    to_ns: int | None = typer.Option(None, "--to-ns", callback=TIME_NS, help="Window end (exclusive): ns after each run's time 0 (--align)."),
    align: str | None = typer.Option(
        None,
        "--align",
        metavar="origin|utc|own",
        help="Where each run's time 0 lies: origin (default: its first event, runs.origin_ns, every run from 0 side by side), "
        "utc (one instant for all: the earliest first event among the runs on the absolute clock, runs.clock_origin_utc_ns, "
        "so ranks and runs recorded together line up as they ran), own (each run's own clock).",
    ),
    keep_clocks: bool = typer.Option(False, "--keep-clocks", help="Same as --align own (the option's name before --align)."),
    critical_path: bool = typer.Option(
        False, "--critical-path", help="Add each run's critical path (analyze -a critical_path) as a track of its own, its segments linked by flows."
    ),
) -> None:
    """Write runs of a database as one Perfetto trace: nested CPU slices per thread, one track per
    GPU stream, flows from each launch to its GPU work.

    Example:

      xsp-trace perfetto run.duckdb -o run.pftrace

      xsp-trace perfetto all.duckdb -o layers.pftrace --runs 1,2 --kinds model,layer,kernel --from-ns 0 --to-ns 50000000

      xsp-trace perfetto run.duckdb -o run.pftrace --critical-path

      xsp-trace perfetto ranks.duckdb -o job.pftrace --align utc

    Then open the .pftrace in https://ui.perfetto.dev.
    """
    from .perfetto import PerfettoOptions
    from .store.run_alignment import perfetto_alignment

    options = PerfettoOptions(
        run_ids=comma_list(runs, "--runs", int),
        kinds=comma_list(kinds, "--kinds", example="model,layer,kernel"),
        from_ns=from_ns,
        to_ns=to_ns,
        align=perfetto_alignment(align, keep_clocks),
        critical_path=critical_path,
    )
    write_perfetto(database, output, options)


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    options_metavar="[OPTIONS] -- COMMAND [ARGS]...",
    epilog="The script hands its model to xsp-trace:\n\n"
    "  from xsp_trace.capture import run\n\n"
    '  run(model.eval(), lambda batch_size: torch.randn(batch_size, 3, 224, 224), name="resnet")\n\n'
    "The runner launches the command once per (tool, level, batch size) with XSP_LEVEL, XSP_TOOL, "
    "XSP_BATCH_SIZE, XSP_ITERATIONS, XSP_WARMUP, XSP_DEPTH, XSP_LAYER_SYNC and XSP_OUT set; run() measures "
    "that one run: warm-up, then the un-instrumented loop (plain timers) around the instrumented one.",
)
def capture(
    ctx: typer.Context,
    output: Path = typer.Option(Path("xsp-run"), "-o", "--output", parser=output_path, help="Run directory to write."),
    levels: str = typer.Option(
        "M,ML,MLG", "--levels", help="Comma list of levels: M (model ranges), ML (+ layer ranges), MLG (+ ops/CUDA API/kernels)."
    ),
    batch_sizes: str = typer.Option("1", "--batch-sizes", help="Comma list of batch sizes (passed to the script's make_input)."),
    iterations: int = typer.Option(100, "--iterations", help="Profiled inferences per run (each paired with an un-instrumented one)."),
    warmup: int = typer.Option(10, "--warmup", help="Un-profiled inferences before them."),
    tool: str = typer.Option(
        "torch",
        "--tool",
        help="Who records MLG: torch (torch.profiler in the process), nsys, or a comma list of both; torch+nsys: both in one process, levels M and ML (docs/two_profilers.md).",
    ),
    nvtx_ranges: bool = typer.Option(False, "--nvtx-ranges", help="nsys records M and ML as NVTX (µs per range) instead of the capture's own timer."),
    depth: int | None = typer.Option(None, "--depth", help="Layers at this module depth (default: leaf modules)."),
    layer_sync: str = typer.Option(
        "sync",
        "--layer-sync",
        help="ML run on a GPU: none, sync (synchronize at each layer end) or launch-blocking (CUDA_LAUNCH_BLOCKING=1, as the XSP authors).",
    ),
    metrics: str = typer.Option("", "--metrics", help="ncu metric runs on a GPU, comma list of: flops, dram, occupancy."),
    metric_iterations: int = typer.Option(1, "--metric-iterations", help="Profiled inferences per metric run (ncu replays every kernel)."),
    nsys: str | None = typer.Option(None, "--nsys", help="nsys binary (default: $NSYS, then PATH)."),
    ncu: str | None = typer.Option(None, "--ncu", help="ncu binary (default: $NCU, then PATH)."),
    malloc_tuning: bool = typer.Option(True, "--malloc-tuning/--no-malloc-tuning", help="Set glibc's MALLOC_*_THRESHOLD_ (less page-fault noise)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing run directory."),
    timeout: float | None = typer.Option(None, "--timeout", callback=RUN_SECONDS, help="Seconds one run may take (at most a week)."),
    quiet: bool = typer.Option(False, "-q", "--quiet", help="No progress lines."),
) -> None:
    """Leveled capture: run a command once per (tool, level, batch size) into one run directory.

    A bare `python` or `python3` after -- is xsp-trace's own interpreter, not the first on PATH.

    Example (the script ships with xsp-trace):

      xsp-trace capture --levels M,ML,MLG --iterations 10 --batch-sizes 1,8 -o tiny-run -- python -m xsp_trace.capture.examples.tiny_cnn

      xsp-trace capture --tool nsys --nvtx-ranges --levels M,ML -o tiny-nsys -- python -m xsp_trace.capture.examples.tiny_cnn

      xsp-trace convert tiny-run
    """
    from .capture.runner import CaptureRequest, capture_levels

    request = CaptureRequest(
        command=list(ctx.args),
        out=output,
        levels=comma_list(levels, "--levels", example="M,ML,MLG") or [],
        batch_sizes=comma_list(batch_sizes, "--batch-sizes", int, "1,8") or [],
        iterations=iterations,
        warmup=warmup,
        tools=comma_list(tool, "--tool", example="torch") or [],
        depth=depth,
        layer_sync=layer_sync,
        metrics=comma_list(metrics, "--metrics", example="flops,dram") or [],
        metric_iterations=metric_iterations,
        nsys=nsys,
        ncu=ncu,
        malloc_tuning=malloc_tuning,
        nvtx_ranges=nvtx_ranges,
        overwrite=overwrite,
        timeout_s=timeout,
    )
    manifest = capture_levels(request, progress=None if quiet else say)
    runs = manifest["runs"]
    typer.echo(f"wrote {output} ({len(runs)} runs: {', '.join(r['key'] for r in runs)})")


@app.command()
def query(
    database: Path = typer.Argument(
        ..., help="An xsp-trace DuckDB database or Parquet dataset folder, or a raw trace (converted once into .xsp-cache/ beside it)."
    ),
    sql: str = typer.Argument(
        ...,
        help="SQL to run; @NAME runs an analysis (SELECT * FROM xsp.NAME); @FILE reads the SQL from a file (@queries/... also from any folder).",
    ),
    limit: int = typer.Option(
        50, "--limit", callback=WHOLE, help="Rows to print in the table (0 = all); only these are fetched. CSV prints every row."
    ),
    csv_out: bool = typer.Option(False, "--csv", help="Print CSV instead of a table (streamed in batches)."),
    csv_safe: bool = typer.Option(False, "--csv-safe", help=CSV_SAFE_HELP),
    timeout: float = typer.Option(300, "--timeout", callback=SECONDS, help="Stop the query after this many seconds (0 = no limit; at most a week)."),
    memory_limit: str = typer.Option(
        QUERY_MEMORY_LIMIT,
        "--memory-limit",
        callback=memory_size,
        help="DuckDB's memory cap for the query; beyond it DuckDB spills to a private temporary folder.",
    ),
    allow_external_access: bool = typer.Option(
        False,
        "--allow-external-access",
        help="Let the SQL read and write other files (COPY ... TO, EXPORT DATABASE, ATTACH, read_csv), change settings and install extensions. Off: the data is opened read-only and nothing else is reachable.",
    ),
) -> None:
    """Run ad-hoc SQL on a converted database (read-only) and print the result.

    The analyses and their building blocks are views and macros in the schema xsp (installed by
    convert; loaded for the query on a dataset or an older database), so `top_kernels` and
    `xsp.top_kernels` both name the analysis, and a finding's evidence runs as printed.

    The SQL sees the data only: queries, EXPLAIN, read-only PRAGMAs, SET VARIABLE and session views
    and macros run; COPY/EXPORT/ATTACH/INSTALL/SET/PREPARE, EXPLAIN ANALYZE of anything but a query
    and reading other files are refused unless --allow-external-access is given.

    Example:

      xsp-trace query run.duckdb "select kind, count(*) as n from spans group by kind order by n desc"

      xsp-trace query run.duckdb @top_kernels

      xsp-trace query run.duckdb "SET VARIABLE xsp_bins = 10; SELECT * FROM gpu_utilization_bins"

      xsp-trace query run.duckdb --allow-external-access "COPY (SELECT name, count(*) AS n FROM spans WHERE kind = 'kernel' GROUP BY name) TO 'kernels.csv'"
    """
    import duckdb

    from .sandbox import check_statements, query_connection, sql_argument
    from .store.connection import interrupt_after
    from .terminal.streamed_table import print_result

    sql = sql_argument(sql)
    notes: list[str] = []
    with query_connection(readable_database(database), allow_external_access, memory_limit, notes, sql) as con:
        for note in notes:
            say(note)
        if not allow_external_access:
            check_statements(con, sql, database)
        with interrupt_after(con, timeout, database, exit_when_stuck=state["console_script"]):
            try:
                result = con.execute(sql)
                print_result(result, limit=limit, as_csv=csv_out, csv_safe=csv_safe)
            except duckdb.Error as exc:  # the user's SQL is wrong (or asked for a file)
                raise InputError(database, f"query failed: {str(exc).splitlines()[0]}", "fix the SQL") from exc


@app.command()
def analyze(
    database: Path | None = typer.Argument(
        None,
        help="An xsp-trace DuckDB database, or a raw trace (.nsys-rep, .sqlite, .json[.gz]: converted once into .xsp-cache/ beside it); not needed with --list.",
    ),
    run: list[str] | None = typer.Option(None, "--run", help="Only these run ids (repeat or comma-separate)."),
    analysis: list[str] | None = typer.Option(None, "--analysis", "-a", help="Only these analyses (repeat); default all. --list shows them."),
    fmt: OutputFormat = typer.Option(OutputFormat.table, "--format", help="How to print the tables."),
    report: Path | None = typer.Option(None, "--report", parser=output_path, help="Also write a self-contained HTML report with plots."),
    peak_flops: float | None = typer.Option(
        None, "--peak-flops", callback=PEAK, help="Peak FLOP/s of the GPU for rooflines (overrides the built-in table)."
    ),
    peak_dram_bw: float | None = typer.Option(
        None, "--peak-dram-bw", callback=PEAK, help="Peak DRAM bytes/s of the GPU (overrides the built-in table)."
    ),
    compare: str | None = typer.Option(None, "--compare", help="BASE,OTHER run ids for compare_runs (default: the two lowest)."),
    limit: int = typer.Option(30, "--limit", callback=WHOLE, help="Rows per table in every format (0 = all)."),
    csv_safe: bool = typer.Option(False, "--csv-safe", help="With --format csv: " + CSV_SAFE_HELP),
    list_analyses: bool = typer.Option(False, "--list", help="List the analyses and exit."),
    layer_ranges: str | None = typer.Option(
        None,
        "--layer-ranges",
        help="Treat the ranges whose name matches this regular expression as layers (group 1 = name, group 2 = type), or a preset: modules (nn.Module events; convert with --python-functions), hash-ranges (## name ## annotations).",
    ),
    layer_depth: int | None = typer.Option(
        None,
        "--layer-depth",
        callback=NESTING_LEVEL,
        help="With --layer-ranges: nesting level among the matching ranges (1 = outermost); default the innermost.",
    ),
    iteration: list[str] | None = typer.Option(None, "--iteration", help="Only these iterations (step numbers; repeat, comma-separate or A-B)."),
    window: str | None = typer.Option(None, "--window", help="Spans starting in START:END after each run's start: 120ms:180ms (ns/us/ms/s)."),
    align: str | None = typer.Option(
        None,
        "--align",
        metavar="origin|utc",
        help="The clock of --window: origin (default: after each run's first event) or utc (after the earliest first event among "
        "the runs on the absolute clock, runs.clock_origin_utc_ns: one instant in every run, as `perfetto --align utc` shows).",
    ),
    what_if: list[str] | None = typer.Option(
        None,
        "--what-if",
        help="Predict the step time with some work changed (repeat): KIND:REGEX*FACTOR or KIND:REGEX=DURATION, KIND one of kernel, memcpy, memset, communication, gpu, op, api, sync, region (a CPU span and everything nested in it); e.g. 'kernel:gemm*0.5', 'sync:cudaStreamSynchronize=0', 'op:aten::to*0', 'region:DataLoader=0'. Prints the what_if analysis.",
    ),
    scope: Scope = typer.Option(
        Scope.all,
        "--scope",
        help="GPU work counted: all (default: every kernel, copy and set of the trace, whenever launched) or profiled "
        "(as HTA 0.5 with include_last_profiler_step=True: in a run with 2+ steps, only work whose launch is in the trace and "
        "started by the end of the last step).",
    ),
    timeout: float = typer.Option(600, "--timeout", callback=SECONDS, help="Stop after this many seconds (0 = no limit; at most a week)."),
    memory_limit: str = typer.Option(
        QUERY_MEMORY_LIMIT, "--memory-limit", callback=memory_size, help="DuckDB's memory cap; beyond it DuckDB spills to a temporary folder."
    ),
    findings: bool = typer.Option(
        False,
        "--findings",
        help="Print what matters in the trace, ranked, in words, with the analysis rows that show it (then only the -a analyses).",
    ),
    show_all: bool = typer.Option(False, "--all", help="Print every analysis (without -a, --sort or --columns: a one-screen summary)."),
    sort: str | None = typer.Option(None, "--sort", help="Order rows by COL (largest or A-Z first; COL:asc / COL:desc), in every table with it."),
    columns: str | None = typer.Option(None, "--columns", help="Only these comma-separated columns, in this order, in every table with them."),
    wide: bool = typer.Option(False, "--wide", help="Tables as wide as they need, not cut to the terminal's width."),
    full_names: bool = typer.Option(False, "--full-names", help="Kernel names in full (default: the demangled base name, as nsys's :base)."),
    settings: list[str] | None = typer.Option(
        None,
        "--set",
        help="NAME=VALUE, a setting of an analysis (repeat); the expert rules' are named as nsys analyze names its rule options: rows (per rule and run, "
        "default 50), start / end (ns after the run's first event), nvtx (TEXT[@DOMAIN]: the first such range's window and process), gap "
        "(gpu_starvation, ms, default 500), threshold (gpu_low_utilization, %, default 50), chunks (gpu_low_utilization, default 30); "
        "stall (step_causes: a queue delay over this many ns is a stall on a dependency, default 100000); sequence_op and "
        "sequence_min (kernel_sequences: the ops, by name, and the fewest GPU operations of a pattern, default 3), pace_kernel "
        "(kernel_pace: the kernel followed) and hist_bins (cuda_gpu_kern_hist: bins per kernel, default 10).",
    ),
) -> None:
    """The XSP analyses, leveled-corrected: model, layer and kernel latency, rooflines, GPU time.

    Each analysis is a documented SQL file (queries/analyses/*.sql) over the SQL library queries/lib/*.sql.
    Without -a: a one-screen summary (--all: every analysis). Tables show times in ms (the header says
    so; CSV and JSON keep the analyses' ns) and fit the terminal (--wide does not cut them). Times are
    after each run's first event (runs.origin_ns), as in `xsp-trace perfetto`'s export.

    Example:

      xsp-trace analyze run.duckdb

      xsp-trace analyze run.duckdb -a top_kernels --sort avg_ms --columns name,instances,avg_ms --full-names

      xsp-trace analyze run/xsp.duckdb --analysis layer_latency --analysis kernel_info

      xsp-trace analyze h100.duckdb --peak-flops 67e12 --peak-dram-bw 3.35e12 --report report.html

      xsp-trace analyze qwen.duckdb --layer-ranges modules --layer-depth 2 -a layer_gpu_aggregates

      xsp-trace analyze rank0.duckdb --iteration 552 -a step_bound -a gpu_idle_gaps

      xsp-trace analyze rank0.duckdb --window 120ms:180ms -a gpu_idle_gaps

      xsp-trace analyze ranks.duckdb --window 120ms:180ms --align utc -a gpu_idle_gaps

      xsp-trace analyze rank1.duckdb --scope profiled -a comm_compute_overlap -a gpu_busy_idle

      xsp-trace analyze run.duckdb --findings

      xsp-trace analyze run.duckdb --what-if 'kernel:gemm*0.5' --what-if 'sync:cudaStreamSynchronize=0'

      xsp-trace analyze h100.duckdb -a gpu_starvation -a cuda_sync_api --set gap=100 --set rows=10
    """
    from .analyze.command import AnalyzeRequest, run_analyze
    from .analyze.present import View, check_names, list_all, run_pair
    from .analyze.session import AnalysisOptions
    from .analyze.settings import parse_settings
    from .store.run_alignment import window_alignment
    from .terminal.readable_table import TableStyle

    if list_analyses:
        return list_all()
    if database is None:
        raise InputError(None, "no database given", "xsp-trace analyze RUN.duckdb (or --list to see the analyses)")
    if what_if:
        from .analyze.critical_path.what_if import parse_rule

        for rule in what_if:
            parse_rule(rule)  # one line for a rule that does not parse, before anything runs
    request = AnalyzeRequest(memory_limit, timeout, tuple(analysis or ()), findings, show_all, report)
    picked = tuple(comma_list(columns, "--columns", example="name,total_ms") or ())
    view = View(fmt.value, limit, TableStyle.for_terminal(wide, full_names), sort, picked, csv_safe)
    options = AnalysisOptions(
        runs=comma_list(run, "--run", int),
        peak_flops=peak_flops,
        peak_dram_bytes_per_s=peak_dram_bw,
        compare=run_pair(comma_list(compare, "--compare", int), compare),
        layer_ranges=layer_ranges,
        layer_depth=layer_depth,
        iterations=iteration_list(iteration),
        window_ns=time_window(window),
        align=window_alignment(align, window is not None),
        settings=parse_settings(settings),
        what_if=tuple(what_if or ()),
        scope=scope.value,
    )
    check_names(request.names(options))
    if report is not None:  # refused before the analyses run, not after
        check_output_path(report)
        refuse_inputs(report, [database], "report")
    if run_analyze(readable_database(database), database, options, view, request) is not None:
        say(f"wrote {report}")


# The commands that add to a database a convert wrote (cli_database.py), and the comparison of two
# (cli_diff.py), registered here like the rest.
app.command()(metrics)
app.command("install-analyses")(install_analyses_command)
app.command()(diff)


def main() -> None:
    """The console script: SIGINT/SIGTERM unwind (temporary outputs removed) and exit 130/143."""
    install_signal_handlers()
    state["console_script"] = True  # this process is the CLI's own: a stuck --timeout may end it
    try:
        app()
    except SystemExit as exc:
        _exit_if_signalled()
        raise exc
    except BaseException as exc:
        _exit_if_signalled()
        if isinstance(exc, Interrupted):  # pragma: no cover - Interrupted always records its signal
            raise SystemExit(128 + exc.signum) from exc
        raise


def _exit_if_signalled() -> None:
    signum = received_signal()
    if signum is not None:
        name = signal.Signals(signum).name
        print(f"xsp-trace: interrupted by {name}; nothing was written", file=sys.stderr)
        raise SystemExit(128 + signum)


if __name__ == "__main__":
    main()
