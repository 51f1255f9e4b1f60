"""Facts about Nsight Compute (ncu) CSV output and the metrics the XSP analyses derive from it.

`ncu --csv --page raw` (and `ncu --import REPORT.ncu-rep --csv --page raw`) writes one row per
profiled kernel launch: the identification columns below, then one column per metric, with a
second row of units ("" for identification columns). `--page details` writes the long form,
one row per (kernel, metric) with "Section Name", "Metric Name", "Metric Unit", "Metric Value".
Values may carry thousands separators ("1,024"); with the default `--print-units auto` ncu
scales units (Kbyte, Mbyte, usecond, ...), with `--print-units base` it does not. Lines before
the header (==PROF== ... and the program's own output) are not CSV.
nvprof-era metric names (flop_count_sp, dram_read_bytes, achieved_occupancy: what the XSP
paper used) are accepted too.
"""

from __future__ import annotations

# Identification columns of the raw page, in ncu's order.
ID_COLUMN = "ID"
KERNEL_NAME_COLUMN = "Kernel Name"
IDENTIFICATION_COLUMNS = (
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Kernel Time",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
)
# Long form (--page details).
DETAILS_METRIC_NAME = "Metric Name"
DETAILS_METRIC_UNIT = "Metric Unit"
DETAILS_METRIC_VALUE = "Metric Value"
DETAILS_EXTRA_COLUMNS = ("Section Name", "Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")

# Unit prefixes ncu uses when it scales (--print-units auto): decimal SI.
UNIT_PREFIXES = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
# Base units and the factor to the unit xsp-trace stores (bytes, counts, ns, fraction).
TIME_UNITS_TO_NS = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
BASE_UNITS = ("byte", "inst", "cycle", "warp", "block", "thread", "register", "sector", "request", "hz")

# Derived metrics the analyses read (metrics.metric values written by xsp-trace next to the raw ones).
FLOPS = "xsp.flops"
DRAM_READ_BYTES = "xsp.dram_read_bytes"
DRAM_WRITE_BYTES = "xsp.dram_write_bytes"
ACHIEVED_OCCUPANCY = "xsp.achieved_occupancy"  # fraction 0..1

# FLOPs: thread-instruction counts times FLOPs per instruction (FMA = 2), every precision;
# nvprof flop_count_* are FLOPs already.
FLOP_COUNTERS = {
    "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 2.0,
    "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum": 2.0,
    "smsp__sass_thread_inst_executed_op_hadd_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum": 1.0,
    "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum": 2.0,
    "flop_count_sp": 1.0,
    "flop_count_dp": 1.0,
    "flop_count_hp": 1.0,
}
DRAM_READ_METRICS = ("dram__bytes_read.sum", "dram_read_bytes")
DRAM_WRITE_METRICS = ("dram__bytes_write.sum", "dram_write_bytes")
# Occupancy metric -> factor to a 0..1 fraction (ncu reports percent).
OCCUPANCY_METRICS = {"sm__warps_active.avg.pct_of_peak_sustained_active": 0.01, "achieved_occupancy": 1.0}
