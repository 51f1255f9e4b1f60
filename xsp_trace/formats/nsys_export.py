"""Facts about Nsight Systems SQLite exports (schemas 2.9.1 / nsys 2022.2 to 3.25.0 / nsys 2026.2).

Everything the nsys converter knows about the export format is here, named: table names and their
versioned variants, event-type and event-class codes, enum labels for exports that lack their
ENUM_* tables, and how globalTid/globalPid pack process and thread ids.
"""

from __future__ import annotations

import re

# Metadata table: renamed in export schema 3.x.
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
META_SCHEMA_VERSION = "EXPORT_SCHEMA_VERSION"
META_PRODUCT_VERSION = "EXPORT_PRODUCT_VERSION"
META_HOST = "EXPORT_HOST"

# Activity and event tables (base names; some exports add a `_V<n>` suffix -- see resolve_table).
KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
SYNCHRONIZATION = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
OSRT_API = "OSRT_API"  # OS runtime library calls (nsys --trace=osrt)
NVTX_EVENTS = "NVTX_EVENTS"
STRING_IDS = "StringIds"
THREAD_NAMES = "ThreadNames"
PROCESSES = "PROCESSES"
TARGET_INFO_GPU = "TARGET_INFO_GPU"
TARGET_INFO_CUDA_DEVICE = "TARGET_INFO_CUDA_DEVICE"
SESSION_START = "TARGET_INFO_SESSION_START_TIME"
ENUM_MEMCPY_OPER = "ENUM_CUDA_MEMCPY_OPER"
ENUM_MEM_KIND = "ENUM_CUDA_MEM_KIND"
ENUM_SYNC_TYPE = "ENUM_CUPTI_SYNC_TYPE"
# CPU sampling (nsys --sample=cpu): one COMPOSITE_EVENTS row per sample (id, start, cpu,
# threadState, globalTid), its call chain in SAMPLING_CALLCHAINS (one row per frame: id,
# stackDepth from 0 = the sampled function, symbol and module as StringIds). Thread scheduling:
# one SCHED_EVENTS row per switch (start, cpu, isSchedIn, globalTid); nsys 2022.4 writes them with
# --sample=cpu even under --cpuctxsw=none. Same columns from export schema 2.9.1 to 3.x.
COMPOSITE_EVENTS = "COMPOSITE_EVENTS"
SAMPLING_CALLCHAINS = "SAMPLING_CALLCHAINS"
SCHED_EVENTS = "SCHED_EVENTS"
ENUM_SAMPLING_THREAD_STATE = "ENUM_SAMPLING_THREAD_STATE"

_VERSIONED = re.compile(r"^(?P<base>.+?)_V(?P<n>\d+)$")


def resolve_table(existing: set[str], base: str) -> str | None:
    """The name under which `base` exists in this export: itself, or its highest `_V<n>` variant."""
    best, best_n = (base, -1) if base in existing else (None, -1)
    for name in existing:
        m = _VERSIONED.match(name)
        if m and m.group("base") == base and int(m.group("n")) > best_n:
            best, best_n = name, int(m.group("n"))
    return best


# NVTX_EVENTS.eventType (ENUM_NSYS_EVENT_TYPE; that table is absent from old exports).
class NvtxEventType:
    MARK = 34
    THREAD_NAME = 39  # NvtxThread: nvtxNameOsThread
    PUSHPOP_RANGE = 59
    STARTEND_RANGE = 60
    NVTXT_MARK = 65
    NVTXT_PUSHPOP_RANGE = 70  # NVTX-text (file-based) ranges
    NVTXT_STARTEND_RANGE = 71
    DOMAIN_CREATE = 75


NVTX_RANGE_TYPES = (
    NvtxEventType.PUSHPOP_RANGE,
    NvtxEventType.STARTEND_RANGE,
    NvtxEventType.NVTXT_PUSHPOP_RANGE,
    NvtxEventType.NVTXT_STARTEND_RANGE,
)
NVTX_PUSHPOP_TYPES = (NvtxEventType.PUSHPOP_RANGE, NvtxEventType.NVTXT_PUSHPOP_RANGE)
NVTX_MARK_TYPES = (NvtxEventType.MARK, NvtxEventType.NVTXT_MARK)


# CUPTI_ACTIVITY_KIND_RUNTIME.eventClass (ENUM_NSYS_EVENT_CLASS).
class ApiEventClass:
    CUDA_RUNTIME = 0
    CUDA_DRIVER = 1
    # 67 (TRACE_PROCESS_EVENT_CUDABACKTRACE) rows repeat runtime calls to carry their call
    # stacks (same correlationId); they are skipped so each call is counted once.
    CUDA_BACKTRACE = 67


API_CLASSES = {ApiEventClass.CUDA_RUNTIME: "cuda_runtime", ApiEventClass.CUDA_DRIVER: "cuda_driver"}


# OSRT_API.eventClass (ENUM_NSYS_EVENT_CLASS): the calls themselves; nsys also writes zero-length
# "OS runtime libraries profiling started/finished" markers (31, 32) that are not calls, and its
# osrtsum report counts class 27 only.
class OsrtEventClass:
    CALL = 27


# Category of the spans made from OS runtime calls (kind 'other').
OSRT_CATEGORY = "osrt"
# OS runtime calls that block the calling thread until something else happens (a lock, a
# condition, I/O, a timer): the libc entry points nsys --trace=osrt records under these names.
OSRT_BLOCKING_CALLS = (
    "futex",
    "pthread_mutex_lock",
    "pthread_cond_wait",
    "pthread_cond_timedwait",
    "pthread_join",
    "sem_wait",
    "sem_timedwait",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "read",
    "pread",
    "pread64",
    "readv",
    "write",
    "pwrite",
    "pwrite64",
    "writev",
    "recv",
    "recvfrom",
    "recvmsg",
    "send",
    "sendto",
    "sendmsg",
    "accept",
    "accept4",
    "connect",
    "wait",
    "waitpid",
    "sleep",
    "usleep",
    "nanosleep",
    "clock_nanosleep",
    "fread",
    "fwrite",
)

# Versioned entry-point suffix on API names in older exports (cudaLaunchKernel_v7000); nsys's
# own cudaapisum strips it too.
API_NAME_VERSION_SUFFIX = re.compile(r"_v\d+$")

# Labels used when an export has no ENUM_* table (same values as the ENUM tables of newer exports).
MEMCPY_KIND_LABELS = {
    0: "Unknown",
    1: "Host-to-Device",
    2: "Device-to-Host",
    3: "Host-to-Array",
    4: "Array-to-Host",
    5: "Array-to-Array",
    6: "Array-to-Device",
    7: "Device-to-Array",
    8: "Device-to-Device",
    9: "Host-to-Host",
    10: "Peer-to-Peer",
    11: "Unified Host-to-Device",
    12: "Unified Device-to-Host",
    13: "Unified Device-to-Device",
}
# Short direction codes for memops.copy_kind, keyed by the same copyKind values.
MEMCPY_KIND_SHORT = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
    11: "UvmHtoD",
    12: "UvmDtoH",
    13: "UvmDtoD",
}
MEM_KIND_LABELS = {
    0: "Pageable",
    1: "Pinned",
    2: "Device",
    3: "Array",
    4: "Managed",
    5: "Device Static",
    6: "Managed Static",
    7: "Unknown",
}
# COMPOSITE_EVENTS.threadState labels (ENUM_SAMPLING_THREAD_STATE, absent from 2.9.1 exports).
SAMPLING_THREAD_STATE_LABELS = {
    0: "Unknown",
    1: "Running",
    2: "Interruptible",
    3: "Uninterruptible",
    4: "Stopped",
    5: "Terminated",
    6: "Unscheduled",
    7: "Waiting",
    8: "OS runtime",
    9: "Initialized",
    10: "Transition",
}
# What a thread does between two SCHED_EVENTS rows (isSchedIn non-zero: it was scheduled in).
SCHED_IN_STATE = "running"
SCHED_OUT_STATE = "descheduled"
SYNC_TYPE_LABELS = {
    0: "Unknown",
    1: "Event sync",
    2: "Stream wait sync",
    3: "Stream sync",
    4: "Context sync",
}

# CUDA graphs. With `--cuda-graph-trace=node`, every node a graph launch replays is its own
# kernel/memcpy/memset row carrying the correlationId of the cudaGraphLaunch/cuGraphLaunch call
# (one id for all nodes of the replay) and, in the activity tables that have the columns, the ids
# of its graph and graph node (NULL, or 0 in CUPTI, for work launched outside a graph). They are
# kept in span_args under the keys Kineto writes for the same CUPTI fields.
GRAPH_ID_COLUMN = "graphId"
GRAPH_NODE_ID_COLUMN = "graphNodeId"
GRAPH_ID_ARG = "graph id"
GRAPH_NODE_ID_ARG = "graph node id"
NOT_IN_GRAPH = 0
# With `--cuda-graph-trace=graph` a whole replay is one row of this table instead (no node rows);
# not converted yet.
GRAPH_TRACE = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"

# Display names of GPU memory operations, as nsys's GUI and gputrace report show them.
MEMCPY_NAME = "[CUDA memcpy {label}]"
MEMSET_NAME = "[CUDA memset]"

# globalTid = (pid << 24) | tid, globalPid = pid << 24, plus a hardware/VM id in the high bits.
PID_SHIFT = 24
ID_MASK = 0xFFFFFF

# Required columns per table: an export lacking them cannot be converted.
REQUIRED_COLUMNS = {
    KERNEL: ("start", "end", "deviceId", "streamId", "correlationId", "demangledName"),
    RUNTIME: ("start", "end", "globalTid", "correlationId", "nameId"),
    MEMCPY: ("start", "end", "deviceId", "streamId", "correlationId", "bytes", "copyKind"),
    MEMSET: ("start", "end", "deviceId", "streamId", "correlationId", "bytes"),
    SYNCHRONIZATION: ("start", "end", "streamId", "correlationId"),
    NVTX_EVENTS: ("start", "end", "eventType", "globalTid"),
    STRING_IDS: ("id", "value"),
    COMPOSITE_EVENTS: ("id", "start", "globalTid"),
    SAMPLING_CALLCHAINS: ("id", "symbol", "module", "stackDepth"),
    SCHED_EVENTS: ("start", "isSchedIn", "globalTid"),
}

# Columns an export may lack (nsys stats does without them): converted without, with a warning.
# globalPid of GPU activities: their process is then that of the CUDA API call with the same
# correlation id (xsp_trace.convert.validate).
GPU_PID_COLUMN = "globalPid"
DEGRADABLE_COLUMNS = {KERNEL: (GPU_PID_COLUMN,), MEMCPY: (GPU_PID_COLUMN,), MEMSET: (GPU_PID_COLUMN,), SYNCHRONIZATION: (GPU_PID_COLUMN,)}


def resolve_table_with_rows(existing: set[str], base: str, has_rows) -> str | None:
    """As resolve_table, but an empty `_V<n>` variant does not win over a lower one that has rows."""
    variants = sorted((int(m.group("n")), name) for name in existing if (m := _VERSIONED.match(name)) and m.group("base") == base)
    candidates = [name for _, name in reversed(variants)] + ([base] if base in existing else [])
    return next((name for name in candidates if has_rows(name)), candidates[0] if candidates else None)


# nsys export refuses reports from a newer nsys ("Version number is invalid", also said of
# damaged reports); the report header carries the writer's version as
# "NVIDIA Tegra Profiler Report 2026@1@2@63-...", which is what the converter compares.
REPORT_HEADER_VERSION = re.compile(rb"Profiler Report (\d+)@(\d+)@(\d+)")
