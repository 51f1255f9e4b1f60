"""The `xsp-trace` commands that add to a database `convert` wrote: Nsight Compute metrics, and the
analyses installed anew. Thin wrappers, registered on the app in cli.py."""

from __future__ import annotations

from pathlib import Path

import typer

from .cli_options import RUN_ID
from .errors import InputError
from .printable import printable


def metrics(
    database: Path = typer.Argument(..., help="An xsp-trace database holding the traced run the metrics belong to."),
    inputs: list[Path] = typer.Argument(..., help="Nsight Compute output: `ncu --csv --page raw` CSV, or .ncu-rep (needs ncu)."),
    run: int | None = typer.Option(None, "--run", callback=RUN_ID, help="Run whose kernels the launches match (default: the only MLG run)."),
    ncu: str | None = typer.Option(None, "--ncu", help="ncu binary for .ncu-rep inputs (default: PATH)."),
) -> None:
    """Add Nsight Compute metrics of metric runs to a converted database (matched by kernel name and order).

    Example:

      ncu --import metrics.ncu-rep --csv --page raw > metrics.csv

      xsp-trace metrics run.duckdb metrics.csv --run 3
    """
    from .analyze.install import install_analyses
    from .convert.ncu import import_ncu_metrics
    from .store.database import atomic_database

    if not database.exists():
        raise InputError(database, "does not exist", "convert the traced run first: xsp-trace convert TRACE -o " + database.name)
    with atomic_database(database, append=True, inputs=inputs) as con:
        for path in inputs:
            done = import_ncu_metrics(con, path, run, ncu)
            typer.echo(
                printable(f"{path}: {done.matched} of {done.launches} launches matched to kernels of run {done.run_id} (by {done.name_column})")
            )
            if done.unmatched_names:  # kernel names from the ncu CSV
                typer.echo(printable("  unmatched: " + "; ".join(done.unmatched_names[:5])))
        install_analyses(con)  # a database a command writes has its analyses installed, up to date


def install_analyses_command(
    database: Path = typer.Argument(..., help="An xsp-trace DuckDB database (written by convert; rewritten atomically)."),
    bind_views: bool = typer.Option(
        False,
        "--bind-views",
        help="Create the views bound (their column types stored), as DuckDB 1.x clients need to read them; takes seconds more.",
    ),
) -> None:
    """Install (or update) the analyses in a database as views and macros in its schema xsp, so any DuckDB
    client runs them without xsp-trace; convert does this itself, so it is for databases converted by
    an older xsp-trace, or (--bind-views) for DuckDB 1.x clients: convert's views are read by DuckDB 2.0 only.

    Example:

      xsp-trace install-analyses run.duckdb && duckdb -readonly run.duckdb -c "SELECT * FROM xsp.top_kernels"
    """
    from .analyze.install import install_analyses
    from .store.database import atomic_database

    if not database.is_file():
        raise InputError(database, "is not a database file", "pass a .duckdb file written by xsp-trace convert")
    with atomic_database(database, append=True) as con:
        install_analyses(con, bind_views=bind_views)
    typer.echo(f"installed the analyses in {database} (schema xsp: SELECT * FROM xsp.xsp_analyses lists them)")
