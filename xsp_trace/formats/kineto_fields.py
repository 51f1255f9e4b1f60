"""Facts about PyTorch profiler (Kineto) Chrome-trace JSON, per era, as data.

Kineto writes `{"traceEvents": [...], <metadata keys>}`; the metadata keys may come before or
after the events (2021 traces put `distributedInfo` last; some 2025 traces put everything last).
Times are microseconds: integers until 2022, floats with 3 decimals (ns resolution) since 2024,
and since late 2024 relative to `baseTimeNanoseconds` (UTC epoch ns of ts = 0) instead of the
UNIX epoch.
"""

from __future__ import annotations

# Top-level keys of the trace object.
EVENTS_KEY = "traceEvents"
SCHEMA_VERSION_KEY = "schemaVersion"
DEVICE_PROPERTIES_KEY = "deviceProperties"
DISTRIBUTED_INFO_KEY = "distributedInfo"
# Keys inside distributedInfo: this process's rank and the job's number of ranks.
DISTRIBUTED_RANK = "rank"
DISTRIBUTED_WORLD_SIZE = "world_size"
BASE_TIME_NS_KEY = "baseTimeNanoseconds"  # 2024+: UTC epoch ns of ts = 0
HOST_NAME_KEYS = ("host_name", "hostname")
TOOL_VERSION_KEYS = ("pytorch_version", "torch_version")

# Non-finite numbers. JSON has none, but Python's json module writes NaN, Infinity and -Infinity,
# and Kineto wrote `inf` for the bandwidth of a memcpy of 0 us (pytorch/kineto#105, 2021). Read as
# DuckDB's JSON reader reads them: one of these words in any case, with an optional minus sign
# (`+inf` is no number). docs/robustness.md, "Inputs", says what becomes of them.
NON_FINITE_WORDS = ("nan", "inf", "infinity")

# Event phases (Chrome trace format).
PHASE_COMPLETE = "X"
PHASE_INSTANT = ("i", "I")
PHASE_COUNTER = "C"
PHASE_METADATA = "M"
PHASE_FLOW_START = "s"
PHASE_FLOW_END = "f"

# Event categories, lower-cased (2021 traces write Kernel/Runtime/Memcpy/Memset/Operator), to
# the kind of span they become. None: dropped.
CATEGORY_KIND = {
    "cpu_op": "op",
    "operator": "op",  # 2021
    "user_annotation": "annotation",
    "user annotation": "annotation",
    "gpu_user_annotation": "annotation",
    "cuda_runtime": "api",
    "runtime": "api",  # 2021
    "cuda_driver": "api",
    "driver": "api",
    "privateuse1_runtime": "api",
    "privateuse1_driver": "api",
    "kernel": "kernel",
    "concurrent_kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",  # 2021
    "gpu_memset": "memset",
    "memset": "memset",  # 2021
    "cuda_sync": "sync",
    "python_function": "other",  # only with --python-functions (HTA skips them too)
    "overhead": "other",  # CUPTI buffer requests and the like
    "trace": None,  # the whole-window "PyTorch Profiler (0)" span on the pseudo process "Spans"
}
USER_ANNOTATION_CATEGORIES = frozenset({"user_annotation", "user annotation"})
GPU_ANNOTATION_CATEGORIES = frozenset({"gpu_user_annotation"})
PYTHON_FUNCTION_CATEGORIES = frozenset({"python_function"})
GPU_ACTIVITY_KINDS = frozenset({"kernel", "memcpy", "memset", "sync"})

# Flow events that link a CPU launch ('s') to its GPU activity ('f'); their id is the correlation.
LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g", "async_gpu", "async_cpu_to_gpu"})

# CUDA graphs. One graph launch call replays every node of the graph: CUPTI gives each replayed
# kernel/memcpy/memset the correlation id of that call (so many GPU activities share one id and
# one External id), and Kineto writes a launch flow to each of them (cudaGraphLaunch since
# 2022-07, hipGraphLaunch since 2026-03). Since 2026-02 (CUDA 12+) Kineto also writes the graph
# and node ids on every GPU activity, 0 for work launched outside a graph.
GRAPH_LAUNCH_API_NAMES = frozenset(
    {"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "cuGraphLaunch", "cuGraphLaunch_ptsz", "hipGraphLaunch", "hipGraphLaunch_spt"}
)
ARG_GRAPH_ID = "graph id"
ARG_GRAPH_NODE_ID = "graph node id"
GRAPH_ARGS = frozenset({ARG_GRAPH_ID, ARG_GRAPH_NODE_ID})
NOT_IN_GRAPH = 0  # value of the graph args on GPU work launched outside a graph: not kept

# Instant events that carry memory accounting: become counters and memory_events, not marks.
MEMORY_INSTANT_NAME = "[memory]"
MEMORY_COUNTER_ARGS = ("Total Allocated", "Total Reserved")
MEMORY_ALLOCATED = MEMORY_COUNTER_ARGS[0]  # the caching allocator's bytes in use, sampled at every [memory] event
MEMORY_DEVICE_TYPE_ARG = "Device Type"  # 0 CPU, 1 CUDA (c10::DeviceType)
MEMORY_DEVICE_ID_ARG = "Device Id"
MEMORY_DEVICE_TYPES_GPU = frozenset({1})
# The same events as allocator events (memory_events): the block's address (its free repeats it;
# absent before 2022) and its size, positive for an allocation, negative for a free.
MEMORY_ADDR_ARG = "Addr"
MEMORY_BYTES_ARG = "Bytes"

# torch.profiler's step() wraps each iteration in a range named ProfilerStep#N, N the step number.
# Kineto has recorded it as a user_annotation (2022+), as an `Operator` (2021) or `cpu_op` (some
# builds), sometimes twice (an annotation around an operator), with a gpu_user_annotation copy
# on the GPU; under emit_nvtx it is an NVTX range of the same name. Whatever the category, a CPU
# range of this name is a step (xsp_trace/convert/step_ranges.py); it is the profiler's range, never an op.
PROFILER_STEP_PREFIX = "ProfilerStep#"
PROFILER_STEP_PATTERN = r"^ProfilerStep#[0-9]+$"  # a regular expression (RE2, as DuckDB's)
# The CPU categories besides user annotations in which a ProfilerStep#N range has been recorded.
PROFILER_STEP_OP_CATEGORIES = frozenset({"operator", "cpu_op"})

# Event args. Several spellings across eras.
ARG_CORRELATION = "correlation"
ARG_EXTERNAL_ID = ("External id", "external id")  # 2022+ / 2021
ARG_DEVICE = "device"
ARG_STREAM = "stream"
ARG_BYTES = "bytes"
ARG_MEMCPY_KIND = "kind"  # ROCm memcpy: "HtoD"...
# Autograd: forward ops record the sequence number of the autograd node they create; the backward
# op running that node records the same number and the profiler's id (not the OS tid) of the
# forward thread as "Fwd thread id" (> 0; forward ops write 0 or omit it).
ARG_SEQUENCE_NUMBER = "Sequence number"
ARG_FWD_THREAD_ID = "Fwd thread id"
# Operand details of cpu_op events recorded with record_shapes=True (lists, one entry per operand).
ARG_INPUT_DIMS = "Input Dims"
ARG_INPUT_TYPE = "Input type"
ARG_CONCRETE_INPUTS = "Concrete Inputs"  # 2023+: the values of scalar operands as text ("" for tensors)
# Kernel launch configuration -> kernels columns.
ARG_GRID = "grid"
ARG_BLOCK = "block"
ARG_REGISTERS = "registers per thread"
ARG_SHARED_MEMORY = "shared memory"  # static + dynamic, per block; Kineto does not split them
ARG_BLOCKS_PER_SM = "blocks per SM"
ARG_WARPS_PER_SM = "warps per SM"
ARG_OCCUPANCY_PERCENT = "est. achieved occupancy %"
# Streams Kineto writes for device-wide activities (Context Sync): uint32 -1.
NO_STREAM_VALUES = frozenset({-1, 4294967295})

# Args stored in typed columns (not repeated in span_args) and args of no use after conversion.
TYPED_ARGS = frozenset(
    {
        ARG_CORRELATION,
        ARG_DEVICE,
        ARG_STREAM,
        ARG_GRID,
        ARG_BLOCK,
        ARG_REGISTERS,
        ARG_SHARED_MEMORY,
        ARG_BLOCKS_PER_SM,
        ARG_WARPS_PER_SM,
        ARG_OCCUPANCY_PERCENT,
        ARG_BYTES,
    }
)
DROPPED_ARGS = frozenset(
    {
        "Ev Idx",
        "Profiler Event Index",
        "Trace name",
        "Trace iteration",
        "Record function id",
        "Python id",
        "Python parent id",
        "Python module id",
        "queued",
        "context",
    }
)
# (Typed args are taken out of span_args on GPU spans only: a cpu_op "stream" arg, e.g. of a
# Triton launch, stays in span_args.)

# deviceProperties fields -> devices columns.
DEVICE_ID = "id"
DEVICE_NAME = "name"
DEVICE_MEMORY = "totalGlobalMem"
DEVICE_SM_COUNT = ("numSms", "multiProcessorCount")
DEVICE_COMPUTE_MAJOR = "computeMajor"
DEVICE_COMPUTE_MINOR = "computeMinor"
DEVICE_CLOCK_RATE_KHZ = "clockRate"
DEVICE_UUID = "uuid"
AMD_DEVICE_MARKERS = ("AMD", "Radeon", "Instinct")
AMD_API_PREFIX = "hip"

# Memcpy names: "Memcpy HtoD (Pageable -> Device)"; ROCm: "Memcpy HtoD (Host -> Device)".
MEMCPY_NAME_PATTERN = r"^Memcpy (\w+)(?: \((\w+) -> (\w+)\))?"
# Memset names carry the memory kind that was set (CUPTI's memory kind): "Memset (Device)".
MEMSET_NAME_PATTERN = r"^Memset \((\w[\w ]*)\)$"

# cuda_sync activities (Kineto 2024+): a "Stream Wait Event" makes a stream wait for an event
# recorded on another stream (cudaStreamWaitEvent); its args name that stream and the correlation id
# of the cudaEventRecord call. The critical path follows it as an edge between streams.
STREAM_WAIT_EVENT_NAME = "Stream Wait Event"
ARG_WAIT_ON_STREAM = "wait_on_stream"
ARG_WAIT_ON_EVENT_RECORD_CORRELATION = "wait_on_cuda_event_record_corr_id"
