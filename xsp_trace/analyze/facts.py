"""What the SQL library (queries/lib/) reads besides the database's tables: facts about external
formats (xsp_trace/formats/) as small tables and as DuckDB variables, device peaks from the built-in
table, and the range-name macros (xsp_trace/naming.py).

An analysis session creates them TEMP (`create` = "CREATE OR REPLACE TEMP TABLE"); the installer
(install.py) writes them into the database's `xsp` schema and the variables as the SQL's defaults.
"""

from __future__ import annotations

import duckdb

from .. import naming
from ..formats import (
    aten_list_models,
    aten_perf_models,
    collectives,
    cuda_api,
    kineto_fields,
    ncu_metrics,
    nsys_export,
    nsys_stats,
    op_categories,
    torch_dtypes,
)
from ..formats.device_peaks import lookup_peak
from ..store.sql import insert_rows
from .settings import SETTINGS, rule_facts

TEMP = "CREATE OR REPLACE TEMP TABLE"


def format_tables() -> list[tuple[str, str, list[tuple]]]:
    """(name, columns DDL, rows) of the tables of external-format facts the analyses join."""
    return [
        (
            "xsp_memop_operations",
            "kind VARCHAR, copy_kind VARCHAR, operation VARCHAR",
            [("memcpy", k, v) for k, v in nsys_stats.MEMCPY_OPERATIONS.items()] + [("memset", None, nsys_stats.MEMSET_OPERATION)],
        ),
        (
            "xsp_collective_names",
            "name_key VARCHAR, collective VARCHAR, busbw_scale DOUBLE, busbw_offset DOUBLE",
            [(k, c, *collectives.BUSBW_FACTORS[c]) for k, c in collectives.COLLECTIVES.items()],
        ),
        (
            "xsp_dtype_bytes",
            "dtype_key VARCHAR, bytes INTEGER, precision VARCHAR",
            [(k, b, torch_dtypes.DTYPE_PRECISION.get(k)) for k, b in torch_dtypes.DTYPE_BYTES.items()],
        ),
        (
            "xsp_op_models",
            "op_name VARCHAR, model VARCHAR, a_arg INTEGER, b_arg INTEGER, bias_arg INTEGER, batched BOOLEAN, "
            "causal_arg INTEGER, params_arg INTEGER, outer_counted BOOLEAN",
            [(name, *model) for name, model in aten_perf_models.OP_MODELS.items()],
        ),
        (
            "xsp_list_op_models",
            "op_name VARCHAR, flops_per_element DOUBLE, self_written_only BOOLEAN",
            [(name, *model) for name, model in aten_list_models.LIST_OP_MODELS.items()],
        ),
        ("xsp_not_modelled_reasons", "reason_key VARCHAR, reason VARCHAR", list(aten_perf_models.NOT_MODELLED_REASONS.items())),
        ("xsp_model_categories", "model VARCHAR, category VARCHAR", list(op_categories.MODEL_CATEGORY.items())),
        (
            "xsp_category_patterns",
            "applies_to VARCHAR, rank INTEGER, pattern VARCHAR, category VARCHAR",
            [("op", i, p, c) for i, (p, c) in enumerate(op_categories.OP_PATTERNS)]
            + [("kernel", i, p, c) for i, (p, c) in enumerate(op_categories.KERNEL_PATTERNS)],
        ),
    ]


def load_format_tables(con: duckdb.DuckDBPyConnection, create: str = TEMP, prefix: str = "") -> None:
    """The format_tables, made with `create` (TEMP, or a table under `prefix`, e.g. 'xsp.')."""
    for name, columns, rows in format_tables():
        con.execute(f"{create} {prefix}{name} ({columns})")
        insert_rows(con, f"{prefix}{name}", rows)


def fact_variables() -> dict[str, object]:
    """Every variable the SQL library reads a fact from (patterns, argument names, metric names)."""
    return {
        "xsp_comm_kernel_pattern": collectives.COMM_KERNEL_PATTERN,
        "xsp_not_compute_kernel_pattern": collectives.NOT_COMPUTE_KERNEL_PATTERN,
        "xsp_collective_from_kernel": collectives.COLLECTIVE_FROM_KERNEL,
        "xsp_collective_from_range": collectives.COLLECTIVE_FROM_RANGE,
        "xsp_arg_collective": collectives.ARG_COLLECTIVE,
        "xsp_arg_in_nelems": collectives.ARG_IN_NELEMS,
        "xsp_arg_out_nelems": collectives.ARG_OUT_NELEMS,
        "xsp_arg_dtype": collectives.ARG_DTYPE,
        "xsp_arg_group_size": collectives.ARG_GROUP_SIZE,
        "xsp_arg_input_dims": kineto_fields.ARG_INPUT_DIMS,
        "xsp_kernel_element_bytes": aten_list_models.KERNEL_ELEMENT_BYTES,
        "xsp_kernel_element_type": aten_list_models.KERNEL_ELEMENT_TYPE,
        "xsp_arg_input_type": kineto_fields.ARG_INPUT_TYPE,
        "xsp_arg_concrete_inputs": kineto_fields.ARG_CONCRETE_INPUTS,
        "xsp_counter_allocated": kineto_fields.MEMORY_ALLOCATED,
        "xsp_explicit_sync_api": cuda_api.EXPLICIT_SYNC_API,
        "xsp_implicit_sync_api": cuda_api.IMPLICIT_SYNC_API,
        "xsp_pageable": cuda_api.PAGEABLE,
        "xsp_async_copy_api": cuda_api.ASYNC_COPY_API,
        "xsp_pageable_kinds": sorted({k for kinds in cuda_api.PAGEABLE_KINDS.values() for k in kinds}),
        "xsp_osrt_category": nsys_export.OSRT_CATEGORY,
        "xsp_osrt_blocking_calls": list(nsys_export.OSRT_BLOCKING_CALLS),
        "xsp_data_loading_pattern": naming.DATA_LOADING_PATTERN,
        "xsp_sqlite_round_nudge": nsys_stats.SQLITE_ROUND_NUDGE,
        "xsp_sqlite_round_nudge_below": nsys_stats.SQLITE_ROUND_NUDGE_BELOW,
        "xsp_sqlite_round_whole_from": nsys_stats.SQLITE_ROUND_WHOLE_FROM,
        "xsp_metric_flops": ncu_metrics.FLOPS,
        "xsp_metric_dram_read_bytes": ncu_metrics.DRAM_READ_BYTES,
        "xsp_metric_dram_write_bytes": ncu_metrics.DRAM_WRITE_BYTES,
        "xsp_metric_achieved_occupancy": ncu_metrics.ACHIEVED_OCCUPANCY,
    }


def variable_defaults() -> dict[str, object]:
    """What an unset variable means in the installed SQL: the facts, and the expert rules' defaults."""
    defaults = fact_variables()
    defaults.update(rule_facts())
    defaults.update({s.variable: s.default for s in SETTINGS.values() if s.default is not None})
    return defaults


def fill_device_peaks(con: duckdb.DuckDBPyConnection, source: str, create: str = TEMP, prefix: str = "") -> None:
    """`devices` (from the SQL `source`) with peaks from the built-in table where the database has
    none, and `xsp_matrix_peaks`: dense matrix peaks per precision for the shape-based rooflines."""
    devices, matrix = f"{prefix}devices", f"{prefix}xsp_matrix_peaks"
    con.execute(f"{create} {devices} AS SELECT * FROM {source}")
    names = [r[0] for r in con.execute(f"SELECT DISTINCT name FROM {devices} WHERE name IS NOT NULL").fetchall()]
    for name in names:
        peak = lookup_peak(name)
        if peak is None:
            continue
        con.execute(
            f"UPDATE {devices} SET peak_flops = coalesce(peak_flops, ?), peak_dram_bytes_per_s = coalesce(peak_dram_bytes_per_s, ?) WHERE name = ?",
            [peak.peak_flops, peak.peak_dram_bytes_per_s, name],
        )
    con.execute(f"{create} {matrix} (run_id INTEGER, device_id INTEGER, precision VARCHAR, peak_flops DOUBLE)")
    precisions = sorted(set(torch_dtypes.DTYPE_PRECISION.values()))
    for run_id, device_id, name in con.execute(f"SELECT run_id, device_id, name FROM {devices} WHERE name IS NOT NULL").fetchall():
        peak = lookup_peak(name)
        if peak is not None:
            insert_rows(con, matrix, [(run_id, device_id, p, peak.matrix_peak(p)) for p in precisions if peak.matrix_peak(p)])
    # A device the table does not know still has the bandwidth its trace reports.
    con.execute(
        f"UPDATE {devices} SET peak_dram_bytes_per_s = memory_bandwidth_bytes_per_s "
        "WHERE peak_dram_bytes_per_s IS NULL AND memory_bandwidth_bytes_per_s IS NOT NULL"
    )
