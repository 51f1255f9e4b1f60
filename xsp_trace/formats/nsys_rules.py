"""Facts about the expert rules of `nsys analyze` (Nsight Systems 2022.4, rules/*.py beside nsys) that
queries/analyses/<rule>.sql re-implement over the xsp-trace schema: which API names each rule
matches, which memory kinds and copies it keeps, and its options with their defaults.

API names are matched as nsys's SQLite queries match them: `LIKE` patterns, which SQLite applies
without regard to ASCII case (so the analyses use ILIKE), on the recorded name (nsys keeps the
entry-point suffix, `cudaMemcpyAsync_v3020`; the schema strips it -- the patterns match either).
"""

from __future__ import annotations

from .cuda_api import PAGEABLE
from .nsys_export import MEM_KIND_LABELS, MEMCPY_KIND_SHORT

# cuda-async-memcpy: asynchronous copies that run synchronously because a side is pageable.
ASYNC_MEMCPY_API_LIKE = "cudaMemcpy%Async%"
ASYNC_MEMCPY_HOST_KIND = PAGEABLE  # srcKind or dstKind 0 (ENUM_CUDA_MEM_KIND)

# cuda-sync-memcpy: copies made by cudaMemcpy* without Async, except host-to-device copies of at
# most SMALL_HTOD_BYTES (CUDA returns from those once the data is staged) and copies within one
# device (srcDeviceId = dstDeviceId; the schema keeps no source/destination device, and CUPTI sets
# them only for peer copies).
SYNC_MEMCPY_API_LIKE = "cudaMemcpy%"
SYNC_MEMCPY_API_NOT_LIKE = "%Async%"
SMALL_HTOD_BYTES = 64000
SMALL_COPY_KIND = MEMCPY_KIND_SHORT[1]  # HtoD

# cuda-sync-memset: memsets of pinned or managed memory made by cudaMemset* without async.
SYNC_MEMSET_API_LIKE = "cudaMemset%"
SYNC_MEMSET_API_NOT_LIKE = "%async%"
SYNC_MEMSET_MEM_KINDS = (MEM_KIND_LABELS[1], MEM_KIND_LABELS[4])  # Pinned, Managed

# cuda-sync-api: the runtime calls that block the host until the device or a stream is done.
SYNC_API_LIKE = ("cudaDeviceSynchronize%", "cudaStreamSynchronize%")

# Options of the rules (`nsys analyze -r RULE:NAME=VALUE`) and their nsys defaults; `xsp-trace
# analyze --set NAME=VALUE` sets them (DuckDB variable xsp_rule_<name>).
DEFAULT_ROWS = 50  # rows: at most this many rows per rule (and run)
DEFAULT_GAP_MS = 500  # gpu-starv gap: minimum GPU idle gap, ms (reported when longer)
DEFAULT_THRESHOLD_PCT = 50  # gpu-low-util threshold: chunks below this utilisation, %
DEFAULT_CHUNKS = 30  # gpu-low-util chunks: equal chunks of each (process, GPU) span of work
MAX_CHUNKS = 1000
# nvtx=<text[@domain]>: the window is the first NVTX range (by start) whose name, followed by
# "@domain" when it has one, equals the text; work of other processes is left out, and of other
# threads too when the range's thread is not the process's main thread (nsys reads tid != pid as
# a push/pop range). Explicit start/end override the range's times. A span is in the window when
# it ends at or after its start and starts before its end.
NVTX_DOMAIN_SEPARATOR = "@"
