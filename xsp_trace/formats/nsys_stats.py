"""Facts about `nsys stats` reports that the summary analyses reproduce (queries/analyses/cuda_*_sum.sql,
queries/analyses/nvtx_sum.sql): report names per nsys version, and how the reports name GPU memory operations.

Report names changed in nsys 2023.1 (gpukernsum -> cuda_gpu_kern_sum, ...). Before it, gpukernsum
grouped kernels by name *and* launch configuration (what cuda_gpu_kern_gb_sum does since); the
per-name kernel summary of nsys 2022.4 is the CUDA_KERNEL rows of gpusum.

How the reports compute (nsys 2022.4.2 reports/*.py, on nsys's bundled SQLite 3.36):
  * median: the middle value, or the mean of the two middle values for an even count;
  * stddev: the sample standard deviation (n - 1 in the denominator; 0 for a single value);
  * avg, median, stddev printed rounded to 1 decimal (SQLite round(x, 1)), time % likewise
    (total * 100.0 / sum of totals, in floating point); SQLite 3.36 rounds by printing "%.1f" with
    its own printf, which adds 0.05 plus a nudge of x * 3e-16 (while x < 2^42) and truncates: an
    exact .x5 tie, and a double a few ulps below one (1234.45 is stored as 1234.4499999999998),
    round up -- where DuckDB's round(x, 1) gives 1234.4 (SQLITE_ROUND_* below);
  * NVTX ranges: push/pop and start/end ranges, grouped by (domain:text, style); a range never
    closed ends at the trace's last NVTX timestamp (the converter already ends it there);
  * CUDA API: every row of CUPTI_ACTIVITY_KIND_RUNTIME (runtime and driver calls) by name, a
    4-digit `_vNNNN` entry-point suffix stripped (the converter strips every `_v<digits>`, see
    nsys_export.API_NAME_VERSION_SUFFIX).
"""

from __future__ import annotations

# analysis name -> the report of the same content, per nsys release line.
REPORT_NAMES: dict[str, dict[str, str]] = {
    "cuda_api_sum": {"2022.4": "cudaapisum", "2023.1": "cuda_api_sum"},
    "nvtx_sum": {"2022.4": "nvtxsum", "2023.1": "nvtx_sum"},
    "cuda_gpu_mem_time_sum": {"2022.4": "gpumemtimesum", "2023.1": "cuda_gpu_mem_time_sum"},
    "cuda_gpu_mem_size_sum": {"2022.4": "gpumemsizesum", "2023.1": "cuda_gpu_mem_size_sum"},
    "cuda_gpu_kern_gb_sum": {"2022.4": "gpukernsum", "2023.1": "cuda_gpu_kern_gb_sum"},
    # 2022.4 has no per-name kernel report: gpusum's rows of category CUDA_KERNEL are the same.
    "cuda_gpu_kern_sum": {"2022.4": "gpusum", "2023.1": "cuda_gpu_kern_sum"},
    "osrt_sum": {"2022.4": "osrtsum", "2023.1": "osrt_sum"},
}
GPUSUM_KERNEL_CATEGORY = "CUDA_KERNEL"

# SQLite 3.36's printf("%.*f") rounding (sqlite3/printf.c, etFLOAT): rounder = 0.5 * 10^-precision,
# plus value * SQLITE_ROUND_NUDGE when precision + (binary exponent) / 3 < 15, i.e. for 1 decimal
# below SQLITE_ROUND_NUDGE_BELOW; values of 2^52 and above have no fraction and are left as they
# are (SQLITE_ROUND_WHOLE_FROM). Session variables of the macro xsp_nsys_round (queries/lib/nsys_stats.sql).
SQLITE_ROUND_NUDGE = 3e-16
SQLITE_ROUND_NUDGE_BELOW = 2.0**42
SQLITE_ROUND_WHOLE_FROM = 2.0**52


def report_name(analysis: str, nsys_version: str) -> str:
    """The `nsys stats --report` name of `analysis` for nsys `nsys_version` (e.g. "2022.4.2")."""
    major, minor = (int(x) for x in nsys_version.split(".")[:2])
    line = "2022.4" if (major, minor) < (2023, 1) else "2023.1"
    return REPORT_NAMES[analysis][line]


# Operation names of GPU memory operations in the memory reports (nsysstats MEM_OPER_STRS_CTE), by
# memops.copy_kind (the converters' short direction codes, nsys_export.MEMCPY_KIND_SHORT); a memset
# has no copy kind. Loaded into the analysis session as the table xsp_memop_operations.
MEMSET_OPERATION = "[CUDA memset]"
MEMCPY_OPERATIONS: dict[str, str] = {
    "Unknown": "[CUDA memcpy Unknown]",
    "HtoD": "[CUDA memcpy HtoD]",
    "DtoH": "[CUDA memcpy DtoH]",
    "HtoA": "[CUDA memcpy HtoA]",
    "AtoH": "[CUDA memcpy AtoH]",
    "AtoA": "[CUDA memcpy AtoA]",
    "AtoD": "[CUDA memcpy AtoD]",
    "DtoA": "[CUDA memcpy DtoA]",
    "DtoD": "[CUDA memcpy DtoD]",
    "HtoH": "[CUDA memcpy HtoH]",
    "PtoP": "[CUDA memcpy PtoP]",
    "UvmHtoD": "[CUDA Unified Memory memcpy HtoD]",
    "UvmDtoH": "[CUDA Unified Memory memcpy DtoH]",
    "UvmDtoD": "[CUDA Unified Memory memcpy DtoD]",
}
