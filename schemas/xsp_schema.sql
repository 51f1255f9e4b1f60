-- xsp-trace unified schema (its version: SCHEMA_VERSION in xsp_trace/store/database.py; 6 added runs.origin_ns,
-- 7 memory_events, cpu_samples, cpu_sample_frames and thread_states, 8 span_sources and one_execution_alignments).
--
-- One database holds any number of converted traces ("runs") from Nsight Systems exports and
-- PyTorch profiler (Kineto) traces. Every interval event of every level of the stack -- model,
-- layer, framework op, annotation, CUDA API call, GPU kernel, memory copy/set, synchronization --
-- is one row of `spans`; wide per-kind details live in side tables keyed by (run_id, span_id).
--
-- Conventions:
--   * Times are integer nanoseconds on the run's own clock (nsys: the session clock;
--     Kineto: the trace's `ts` converted from microseconds, rounded half-away-from-zero to the
--     nanosecond -- microsecond values carry at most 3 decimals, so the conversion is exact).
--   * Each run has an origin, runs.origin_ns: the run clock's time of its first event. What
--     analyze, diff, findings, the report and the Perfetto export show is relative to it; the
--     tables keep the run clock, so SQL sees raw times (subtract origin_ns to compare).
--   * Intervals are half-open [start_ns, end_ns); duration = end_ns - start_ns.
--   * span_id is unique within a run only; always join on (run_id, span_id).
--   * Missing information is NULL, never 0 or ''.
--   * Big tables carry no PRIMARY KEY constraint (it slows bulk loads); (run_id, span_id) is
--     nevertheless unique in spans, kernels, memops and launches (gpu_span_id).
-- Applied by xsp_trace.store.database, which stores SCHEMA_VERSION in `schema_info`.

CREATE TABLE IF NOT EXISTS schema_info (
    key VARCHAR PRIMARY KEY,
    value VARCHAR
);
COMMENT ON TABLE schema_info IS 'Key/value facts about this database: schema_version, the xsp-trace version that created it.';
COMMENT ON COLUMN schema_info.key IS 'Name of the fact, e.g. schema_version.';
COMMENT ON COLUMN schema_info.value IS 'Value of the fact, as text.';

CREATE TABLE IF NOT EXISTS runs (
    run_id INTEGER PRIMARY KEY,
    source_kind VARCHAR NOT NULL,
    source_path VARCHAR,
    source_format_version VARCHAR,
    tool VARCHAR,
    tool_version VARCHAR,
    level VARCHAR,
    model VARCHAR,
    batch_size INTEGER,
    rank INTEGER,
    world_size INTEGER,
    host VARCHAR,
    started_at TIMESTAMP,
    clock_origin_utc_ns BIGINT,
    label VARCHAR,
    converted_at TIMESTAMP,
    origin_ns BIGINT
);
COMMENT ON TABLE runs IS 'One row per converted trace. Leveled captures produce one run per (level, batch size).';
COMMENT ON COLUMN runs.run_id IS 'Identifier of the run, unique in the database; every other table refers to it.';
COMMENT ON COLUMN runs.source_kind IS 'What the run was read from: nsys (Nsight Systems export) or kineto (PyTorch profiler JSON).';
COMMENT ON COLUMN runs.source_path IS 'Path of the file given to convert (the .nsys-rep, .sqlite or .json[.gz]).';
COMMENT ON COLUMN runs.source_format_version IS 'Version of the source format: nsys export schema version (e.g. 3.25.0) or Kineto schemaVersion.';
COMMENT ON COLUMN runs.tool IS 'Profiler that recorded the trace: nsys or torch.profiler.';
COMMENT ON COLUMN runs.tool_version IS 'Version of the recording profiler (e.g. nsys 2026.2.1.210), where the trace says.';
COMMENT ON COLUMN runs.level IS 'XSP profiling level of the run (M, ML, MLG, or a metric-run name); NULL for a plain trace.';
COMMENT ON COLUMN runs.model IS 'Name of the profiled model, where known.';
COMMENT ON COLUMN runs.batch_size IS 'Batch size of the profiled inference, where known.';
COMMENT ON COLUMN runs.rank IS 'Distributed rank of the traced process (Kineto distributedInfo.rank), where known.';
COMMENT ON COLUMN runs.world_size IS 'Number of ranks of the distributed job (Kineto distributedInfo.world_size), where known.';
COMMENT ON COLUMN runs.host IS 'Host the trace was recorded or exported on, where known.';
COMMENT ON COLUMN runs.started_at IS 'UTC wall-clock time at which the recording session started, where known.';
COMMENT ON COLUMN runs.clock_origin_utc_ns IS 'UTC epoch nanoseconds of the run clock''s zero, where known (start_ns + this = UTC).';
COMMENT ON COLUMN runs.label IS 'Free label given at conversion (--label), NULL if none.';
COMMENT ON COLUMN runs.converted_at IS 'When xsp-trace converted the trace (UTC).';
COMMENT ON COLUMN runs.origin_ns IS 'The run''s time zero: the earliest time of any of its events (spans.start_ns, marks.ts_ns, counters.ts_ns), ns on the run clock; NULL for a run without events. Times that analyze, diff, findings, the report and the Perfetto export show are relative to it (start_ns - origin_ns).';

CREATE TABLE IF NOT EXISTS devices (
    run_id INTEGER NOT NULL,
    device_id INTEGER NOT NULL,
    name VARCHAR,
    vendor VARCHAR,
    uuid VARCHAR,
    bus_location VARCHAR,
    sm_count INTEGER,
    memory_bytes BIGINT,
    memory_bandwidth_bytes_per_s DOUBLE,
    clock_rate_hz BIGINT,
    compute_major INTEGER,
    compute_minor INTEGER,
    peak_flops DOUBLE,
    peak_dram_bytes_per_s DOUBLE,
    PRIMARY KEY (run_id, device_id)
);
COMMENT ON TABLE devices IS 'GPUs seen in a run. device_id is the CUDA device ordinal that spans.device_id uses (nsys TARGET_INFO_GPU.id is mapped to it).';
COMMENT ON COLUMN devices.run_id IS 'Run the device belongs to.';
COMMENT ON COLUMN devices.device_id IS 'CUDA device ordinal as seen by the traced process (the deviceId of its GPU activities).';
COMMENT ON COLUMN devices.name IS 'Marketing name, e.g. NVIDIA H100 80GB HBM3; NULL when the trace does not record it.';
COMMENT ON COLUMN devices.vendor IS 'nvidia or amd, where known.';
COMMENT ON COLUMN devices.uuid IS 'Device UUID, where recorded.';
COMMENT ON COLUMN devices.bus_location IS 'PCI bus location, where recorded.';
COMMENT ON COLUMN devices.sm_count IS 'Number of streaming multiprocessors (compute units on AMD).';
COMMENT ON COLUMN devices.memory_bytes IS 'Total device memory in bytes.';
COMMENT ON COLUMN devices.memory_bandwidth_bytes_per_s IS 'Memory bandwidth as the trace reports it (bytes/s).';
COMMENT ON COLUMN devices.clock_rate_hz IS 'SM clock rate in Hz, as the trace reports it.';
COMMENT ON COLUMN devices.compute_major IS 'Compute capability, major.';
COMMENT ON COLUMN devices.compute_minor IS 'Compute capability, minor.';
COMMENT ON COLUMN devices.peak_flops IS 'Peak FLOP/s used for rooflines (from the built-in table or an override); NULL if unknown.';
COMMENT ON COLUMN devices.peak_dram_bytes_per_s IS 'Peak DRAM bandwidth used for rooflines (bytes/s); NULL if unknown.';

CREATE TABLE IF NOT EXISTS processes (
    run_id INTEGER NOT NULL,
    pid BIGINT NOT NULL,
    name VARCHAR,
    PRIMARY KEY (run_id, pid)
);
COMMENT ON TABLE processes IS 'Processes of a run that own spans.';
COMMENT ON COLUMN processes.run_id IS 'Run the process belongs to.';
COMMENT ON COLUMN processes.pid IS 'Operating-system process id (nsys: decoded from globalTid/globalPid).';
COMMENT ON COLUMN processes.name IS 'Process name or command, where recorded.';

CREATE TABLE IF NOT EXISTS threads (
    run_id INTEGER NOT NULL,
    pid BIGINT NOT NULL,
    tid BIGINT NOT NULL,
    name VARCHAR,
    PRIMARY KEY (run_id, pid, tid)
);
COMMENT ON TABLE threads IS 'CPU threads of a run that own spans.';
COMMENT ON COLUMN threads.run_id IS 'Run the thread belongs to.';
COMMENT ON COLUMN threads.pid IS 'Process id of the thread.';
COMMENT ON COLUMN threads.tid IS 'Operating-system thread id.';
COMMENT ON COLUMN threads.name IS 'Thread name, where recorded.';

CREATE TABLE IF NOT EXISTS spans (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    parent_id BIGINT,
    depth INTEGER,
    kind VARCHAR NOT NULL,
    name VARCHAR NOT NULL,
    category VARCHAR,
    start_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL,
    pid BIGINT,
    tid BIGINT,
    end_tid BIGINT,
    device_id INTEGER,
    stream_id BIGINT,
    correlation_id BIGINT,
    iteration INTEGER,
    layer_index INTEGER,
    range_style VARCHAR
);
COMMENT ON TABLE spans IS 'Every interval event of every level: model, layer, op, annotation (CPU ranges), api (CUDA runtime/driver calls), kernel, memcpy, memset, sync (GPU activities), other.';
COMMENT ON COLUMN spans.run_id IS 'Run the span belongs to.';
COMMENT ON COLUMN spans.span_id IS 'Identifier of the span, unique within its run.';
COMMENT ON COLUMN spans.parent_id IS 'CPU spans: the tightest enclosing span on the same thread. GPU spans: the API call that launched them (see launches). NULL at the top.';
COMMENT ON COLUMN spans.depth IS 'Number of ancestors following parent_id (0 at the top of a thread; a kernel is one deeper than its API call).';
COMMENT ON COLUMN spans.kind IS 'Level of the stack: model, layer, op, annotation, api, kernel, memcpy, memset, sync or other.';
COMMENT ON COLUMN spans.name IS 'Display name: NVTX text (without the domain), op name, API function name, demangled kernel name, memcpy direction.';
COMMENT ON COLUMN spans.category IS 'Source grouping: the NVTX domain for NVTX ranges, the Kineto category (cpu_op, cuda_runtime, kernel, ...), the nsys API class (cuda_runtime, cuda_driver).';
COMMENT ON COLUMN spans.start_ns IS 'Start time, integer ns on the run clock.';
COMMENT ON COLUMN spans.end_ns IS 'End time, integer ns on the run clock (>= start_ns). NVTX ranges never closed end at the last timestamp of the trace, as nsys stats does.';
COMMENT ON COLUMN spans.pid IS 'Process id that owns the span (for GPU work: the process that launched it).';
COMMENT ON COLUMN spans.tid IS 'Thread the span started on (CPU spans); NULL for GPU spans.';
COMMENT ON COLUMN spans.end_tid IS 'Thread a start/end range ended on when different from tid; NULL otherwise.';
COMMENT ON COLUMN spans.device_id IS 'CUDA device ordinal of GPU spans (devices.device_id); NULL for CPU spans.';
COMMENT ON COLUMN spans.stream_id IS 'GPU stream of GPU spans; NULL for CPU spans.';
COMMENT ON COLUMN spans.correlation_id IS 'Launch correlation id linking an API call and the GPU work it launched; unique per process only.';
COMMENT ON COLUMN spans.iteration IS 'Inference/training iteration the span belongs to (ProfilerStep#N, a range named by convert --step-ranges, or the ordinal of its model range), where known.';
COMMENT ON COLUMN spans.layer_index IS 'Layer spans: the index of the layer in the model (from the xsp layer range name); NULL otherwise.';
COMMENT ON COLUMN spans.range_style IS 'NVTX ranges: push_pop (pushed and popped on one thread, they nest) or start_end (started and ended by handle, may cross threads), as nsys stats nvtxsum reports the style; NULL for spans that are not NVTX ranges.';

CREATE TABLE IF NOT EXISTS kernels (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    short_name VARCHAR,
    mangled_name VARCHAR,
    grid_x INTEGER, grid_y INTEGER, grid_z INTEGER,
    block_x INTEGER, block_y INTEGER, block_z INTEGER,
    registers_per_thread INTEGER,
    shared_mem_static_bytes BIGINT,
    shared_mem_dynamic_bytes BIGINT,
    shared_mem_bytes BIGINT,
    local_mem_per_thread_bytes BIGINT,
    occupancy_estimate DOUBLE,
    blocks_per_sm DOUBLE,
    warps_per_sm DOUBLE
);
COMMENT ON TABLE kernels IS 'Launch configuration of kernel spans (kind = kernel).';
COMMENT ON COLUMN kernels.run_id IS 'Run of the kernel span.';
COMMENT ON COLUMN kernels.span_id IS 'The kernel span (spans.span_id).';
COMMENT ON COLUMN kernels.short_name IS 'Base name without template arguments and parameters (nsys shortName), where recorded.';
COMMENT ON COLUMN kernels.mangled_name IS 'Mangled symbol, where recorded.';
COMMENT ON COLUMN kernels.grid_x IS 'Grid dimension x (blocks).';
COMMENT ON COLUMN kernels.grid_y IS 'Grid dimension y (blocks).';
COMMENT ON COLUMN kernels.grid_z IS 'Grid dimension z (blocks).';
COMMENT ON COLUMN kernels.block_x IS 'Block dimension x (threads).';
COMMENT ON COLUMN kernels.block_y IS 'Block dimension y (threads).';
COMMENT ON COLUMN kernels.block_z IS 'Block dimension z (threads).';
COMMENT ON COLUMN kernels.registers_per_thread IS 'Registers per thread.';
COMMENT ON COLUMN kernels.shared_mem_static_bytes IS 'Static shared memory per block, bytes.';
COMMENT ON COLUMN kernels.shared_mem_dynamic_bytes IS 'Dynamic shared memory per block, bytes.';
COMMENT ON COLUMN kernels.shared_mem_bytes IS 'Shared memory per block, static + dynamic, bytes (Kineto "shared memory" records only this sum; nsys runs fill the static and dynamic columns above instead).';
COMMENT ON COLUMN kernels.local_mem_per_thread_bytes IS 'Local memory per thread, bytes (nsys only).';
COMMENT ON COLUMN kernels.occupancy_estimate IS 'Theoretical occupancy estimated by the profiler, 0..1 (Kineto "est. achieved occupancy %" / 100).';
COMMENT ON COLUMN kernels.blocks_per_sm IS 'Blocks per SM as estimated by the profiler (Kineto).';
COMMENT ON COLUMN kernels.warps_per_sm IS 'Warps per SM as estimated by the profiler (Kineto).';

CREATE TABLE IF NOT EXISTS memops (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    kind VARCHAR NOT NULL,
    copy_kind VARCHAR,
    bytes BIGINT,
    duration_ns BIGINT NOT NULL,
    src_kind VARCHAR,
    dst_kind VARCHAR,
    fill_value BIGINT
);
COMMENT ON TABLE memops IS 'Details of memcpy and memset spans: exactly one row per such span, none for other spans.';
COMMENT ON COLUMN memops.run_id IS 'Run of the span.';
COMMENT ON COLUMN memops.span_id IS 'The memcpy/memset span.';
COMMENT ON COLUMN memops.kind IS 'The span''s kind, memcpy or memset (a copy, so the memory summaries read this table alone).';
COMMENT ON COLUMN memops.copy_kind IS 'Direction of a copy: HtoD, DtoH, DtoD, HtoH, PtoP, ...; NULL for memset.';
COMMENT ON COLUMN memops.bytes IS 'Bytes copied or set.';
COMMENT ON COLUMN memops.duration_ns IS 'The span''s GPU duration, end_ns - start_ns (a copy, so the memory summaries read this table alone).';
COMMENT ON COLUMN memops.src_kind IS 'Memory kind of the source (Pageable, Pinned, Device, ...), where recorded.';
COMMENT ON COLUMN memops.dst_kind IS 'Memory kind of the destination, where recorded.';
COMMENT ON COLUMN memops.fill_value IS 'Byte value a memset wrote, where recorded.';

CREATE TABLE IF NOT EXISTS launches (
    run_id INTEGER NOT NULL,
    api_span_id BIGINT NOT NULL,
    gpu_span_id BIGINT NOT NULL,
    correlation_id BIGINT
);
COMMENT ON TABLE launches IS 'Launch flow: which CPU API call launched which GPU span (kernel, memcpy, memset, sync).';
COMMENT ON COLUMN launches.run_id IS 'Run of both spans.';
COMMENT ON COLUMN launches.api_span_id IS 'The CUDA runtime/driver API span (kind = api).';
COMMENT ON COLUMN launches.gpu_span_id IS 'The GPU span it launched.';
COMMENT ON COLUMN launches.correlation_id IS 'The correlation id both carry.';

CREATE TABLE IF NOT EXISTS span_ancestors (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    ancestor_id BIGINT NOT NULL,
    distance INTEGER NOT NULL
);
COMMENT ON TABLE span_ancestors IS 'Every (span, ancestor) pair: the CPU spans that enclose a span on its thread, and for GPU spans their launching API call and everything enclosing it (what nsys nvtx_gpu_proj_trace projects onto the GPU).';
COMMENT ON COLUMN span_ancestors.run_id IS 'Run of both spans.';
COMMENT ON COLUMN span_ancestors.span_id IS 'The descendant span.';
COMMENT ON COLUMN span_ancestors.ancestor_id IS 'One of its ancestors.';
COMMENT ON COLUMN span_ancestors.distance IS 'depth(span) - depth(ancestor); 1 for the parent.';

CREATE TABLE IF NOT EXISTS steps (
    run_id INTEGER NOT NULL,
    step_span_id BIGINT NOT NULL,
    iteration INTEGER,
    pid BIGINT,
    tid BIGINT,
    start_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL,
    source VARCHAR NOT NULL
);
COMMENT ON TABLE steps IS 'The steps (inferences, training iterations) of a run, one row each: its model ranges, else the outermost CPU ranges that carry an iteration (ProfilerStep#N in any category, or the ranges convert --step-ranges names, which then replace the model ranges), one per iteration and process. Only CPU ranges: a GPU-side copy of a range (Kineto gpu_user_annotation) is a view of its CPU range, never a step of its own.';
COMMENT ON COLUMN steps.run_id IS 'Run of the step.';
COMMENT ON COLUMN steps.step_span_id IS 'The CPU range that is the step (spans.span_id).';
COMMENT ON COLUMN steps.iteration IS 'Its iteration number (N of ProfilerStep#N; of a --step-ranges range, the first integer of its name, else its order from 0; of a model range, its ordinal).';
COMMENT ON COLUMN steps.pid IS 'Process of the step: work of any thread of this process that starts (CPU) or is launched (GPU) inside the window belongs to the step.';
COMMENT ON COLUMN steps.tid IS 'Thread the step range is on.';
COMMENT ON COLUMN steps.start_ns IS 'Start of the step window, ns on the run clock.';
COMMENT ON COLUMN steps.end_ns IS 'End of the step window (exclusive).';
COMMENT ON COLUMN steps.source IS 'model range (an xsp.model range or NVTX model range) or iteration range (e.g. ProfilerStep#N).';

CREATE TABLE IF NOT EXISTS attribution (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    step_span_id BIGINT,
    phase VARCHAR,
    phase_span_id BIGINT,
    forward_span_id BIGINT
);
COMMENT ON TABLE attribution IS 'What every span (CPU and GPU) is charged to across threads: its step, its training phase, and for autograd backward work the forward op that created it (docs/design.md, Attribution). Layers are found from here at analysis time: the innermost layer range enclosing the span (a GPU span: its launch), else the one enclosing its forward op.';
COMMENT ON COLUMN attribution.run_id IS 'Run of the span.';
COMMENT ON COLUMN attribution.span_id IS 'The span.';
COMMENT ON COLUMN attribution.step_span_id IS 'The step (steps.step_span_id) whose window, in the same process, holds the span''s start (CPU spans) or its launching API call''s start (GPU spans), whatever the thread; NULL outside every step.';
COMMENT ON COLUMN attribution.phase IS 'forward, backward or optimizer where the trace says so: the innermost enclosing range (for GPU spans: enclosing the launch) that names a phase (xsp_trace/naming.py PHASE_RULES), or an autograd backward op; NULL otherwise.';
COMMENT ON COLUMN attribution.phase_span_id IS 'The range or op that decided the phase.';
COMMENT ON COLUMN attribution.forward_span_id IS 'Backward work: the forward op that created its autograd node -- same process, same Sequence number, the latest forward op starting before the backward op (Kineto args Sequence number / Fwd thread id); NULL otherwise.';

CREATE TABLE IF NOT EXISTS span_args (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    key VARCHAR NOT NULL,
    value VARCHAR
);
COMMENT ON TABLE span_args IS 'Source details of a span that have no typed column (Kineto args such as shapes and dtypes, NVTX payloads), one row per key.';
COMMENT ON COLUMN span_args.run_id IS 'Run of the span.';
COMMENT ON COLUMN span_args.span_id IS 'The span.';
COMMENT ON COLUMN span_args.key IS 'Argument name as the source writes it (e.g. Input Dims).';
COMMENT ON COLUMN span_args.value IS 'Argument value; compact JSON text for lists and objects.';

CREATE TABLE IF NOT EXISTS marks (
    run_id INTEGER NOT NULL,
    ts_ns BIGINT NOT NULL,
    name VARCHAR,
    category VARCHAR,
    pid BIGINT,
    tid BIGINT
);
COMMENT ON TABLE marks IS 'Instant events: NVTX marks, Kineto instant events.';
COMMENT ON COLUMN marks.run_id IS 'Run of the mark.';
COMMENT ON COLUMN marks.ts_ns IS 'Time of the mark, ns on the run clock.';
COMMENT ON COLUMN marks.name IS 'Mark text.';
COMMENT ON COLUMN marks.category IS 'NVTX domain or Kineto category.';
COMMENT ON COLUMN marks.pid IS 'Process of the mark.';
COMMENT ON COLUMN marks.tid IS 'Thread of the mark.';

CREATE TABLE IF NOT EXISTS counters (
    run_id INTEGER NOT NULL,
    name VARCHAR NOT NULL,
    ts_ns BIGINT NOT NULL,
    value DOUBLE,
    pid BIGINT,
    device_id INTEGER
);
COMMENT ON TABLE counters IS 'Sampled counter values over time (e.g. memory in use), one row per sample.';
COMMENT ON COLUMN counters.run_id IS 'Run of the sample.';
COMMENT ON COLUMN counters.name IS 'Counter name.';
COMMENT ON COLUMN counters.ts_ns IS 'Sample time, ns on the run clock.';
COMMENT ON COLUMN counters.value IS 'Sample value.';
COMMENT ON COLUMN counters.pid IS 'Process the counter belongs to, where it does.';
COMMENT ON COLUMN counters.device_id IS 'Device the counter belongs to, where it does.';

CREATE TABLE IF NOT EXISTS memory_events (
    run_id INTEGER NOT NULL,
    event_index BIGINT NOT NULL,
    ts_ns BIGINT NOT NULL,
    pid BIGINT,
    tid BIGINT,
    device_id INTEGER,
    addr BIGINT,
    bytes BIGINT NOT NULL,
    total_allocated BIGINT,
    total_reserved BIGINT
);
COMMENT ON TABLE memory_events IS 'Allocator events, one row per allocation or free (Kineto [memory] instant events, recorded with profile_memory=True); matched by address into allocations at analysis time (queries/lib/memory.sql).';
COMMENT ON COLUMN memory_events.run_id IS 'Run of the event.';
COMMENT ON COLUMN memory_events.event_index IS 'Position of the event in the trace''s event list: the allocator''s order where events share a time.';
COMMENT ON COLUMN memory_events.ts_ns IS 'Time of the event, ns on the run clock.';
COMMENT ON COLUMN memory_events.pid IS 'Process that allocated or freed.';
COMMENT ON COLUMN memory_events.tid IS 'Thread that allocated or freed: the enclosing CPU op on this thread owns an allocation.';
COMMENT ON COLUMN memory_events.device_id IS 'GPU the memory is on (CUDA/HIP ordinal); NULL for host memory, as counters.device_id.';
COMMENT ON COLUMN memory_events.addr IS 'Address of the block, which its free repeats; NULL where the trace does not record it (Kineto before 2022).';
COMMENT ON COLUMN memory_events.bytes IS 'Bytes allocated (positive) or freed (negative).';
COMMENT ON COLUMN memory_events.total_allocated IS 'The allocator''s bytes in use on the device after the event ("Total Allocated"), where recorded.';
COMMENT ON COLUMN memory_events.total_reserved IS 'The allocator''s bytes reserved from the device after the event ("Total Reserved"), where recorded.';

CREATE TABLE IF NOT EXISTS metrics (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    metric VARCHAR NOT NULL,
    value DOUBLE,
    unit VARCHAR
);
COMMENT ON TABLE metrics IS 'Hardware metrics of GPU spans (Nsight Compute), one row per (span, metric).';
COMMENT ON COLUMN metrics.run_id IS 'Run of the span the metric was measured on.';
COMMENT ON COLUMN metrics.span_id IS 'The kernel span.';
COMMENT ON COLUMN metrics.metric IS 'Metric name as ncu writes it (e.g. dram__bytes_read.sum), or xsp.flops, xsp.dram_read_bytes, xsp.dram_write_bytes, xsp.achieved_occupancy: what xsp-trace derives from them at import (xsp_trace/formats/ncu_metrics.py).';
COMMENT ON COLUMN metrics.value IS 'Metric value in the unit below.';
COMMENT ON COLUMN metrics.unit IS 'Unit: ncu''s base unit (scaled units such as Kbyte or usecond are converted to byte, nsecond); flop, byte or fraction for xsp.* metrics.';

-- Leveled captures (xsp-trace capture): facts the run directory adds to each converted trace.

CREATE TABLE IF NOT EXISTS capture_runs (
    run_id INTEGER PRIMARY KEY,
    run_dir VARCHAR,
    run_key VARCHAR,
    tool VARCHAR,
    level VARCHAR,
    batch_size INTEGER,
    iterations INTEGER,
    warmup INTEGER,
    depth INTEGER,
    layer_sync VARCHAR,
    device VARCHAR,
    threads INTEGER,
    torch_version VARCHAR,
    nvtx_version VARCHAR,
    profiler_scope VARCHAR,
    program_changed BOOLEAN,
    program_change_note VARCHAR,
    minor_faults_uninstrumented BIGINT,
    minor_faults_instrumented BIGINT,
    wall_s DOUBLE
);
COMMENT ON TABLE capture_runs IS 'One row per run converted from a capture run directory: how that (tool, level, batch size) was measured.';
COMMENT ON COLUMN capture_runs.run_id IS 'The converted trace of the run (runs.run_id).';
COMMENT ON COLUMN capture_runs.run_dir IS 'Path of the run directory given to convert.';
COMMENT ON COLUMN capture_runs.run_key IS 'Folder of the run inside it: <tool>-<level>-bs<N>.';
COMMENT ON COLUMN capture_runs.tool IS 'Who recorded: nsys, torch (torch.profiler in the process) or ncu.';
COMMENT ON COLUMN capture_runs.level IS 'M, ML, MLG or metrics:<group>.';
COMMENT ON COLUMN capture_runs.batch_size IS 'Batch size given to the script''s make_input.';
COMMENT ON COLUMN capture_runs.iterations IS 'Profiled inferences (model ranges) of the run; the un-instrumented loop has as many.';
COMMENT ON COLUMN capture_runs.warmup IS 'Un-profiled inferences before the measurement.';
COMMENT ON COLUMN capture_runs.depth IS 'Module depth of the layers; NULL = leaf modules.';
COMMENT ON COLUMN capture_runs.layer_sync IS 'Layer-end device synchronization of layer runs: none, sync or launch-blocking; NULL for M.';
COMMENT ON COLUMN capture_runs.device IS 'Device the model ran on: cpu or the GPU name.';
COMMENT ON COLUMN capture_runs.threads IS 'torch intra-op threads of the profiled process.';
COMMENT ON COLUMN capture_runs.torch_version IS 'torch version of the profiled process.';
COMMENT ON COLUMN capture_runs.nvtx_version IS 'nvtx package version of the profiled process (nsys 2022.4 records ranges only from nvtx <= 0.2.11).';
COMMENT ON COLUMN capture_runs.profiler_scope IS 'torch runs: none (no profiler: model/layer ranges timed by the capture itself: M, ML), user (only record_function annotations: older captures) or all (every aten op: MLG); NULL otherwise.';
COMMENT ON COLUMN capture_runs.program_changed IS 'Whether attaching layer hooks changed the ops one forward runs (e.g. nn.TransformerEncoderLayer leaves its fused fast path); NULL for M.';
COMMENT ON COLUMN capture_runs.program_change_note IS 'What changed, in words, and which ops were lost or added; NULL when nothing changed.';
COMMENT ON COLUMN capture_runs.minor_faults_uninstrumented IS 'Minor page faults of the process during the un-instrumented loop (getrusage).';
COMMENT ON COLUMN capture_runs.minor_faults_instrumented IS 'Minor page faults during the instrumented loop.';
COMMENT ON COLUMN capture_runs.wall_s IS 'Wall-clock seconds of the whole profiled process (startup, profiler, export included).';

CREATE TABLE IF NOT EXISTS capture_latencies (
    run_id INTEGER NOT NULL,
    loop VARCHAR NOT NULL,
    iteration INTEGER NOT NULL,
    phase VARCHAR,
    latency_ns BIGINT NOT NULL
);
COMMENT ON TABLE capture_latencies IS 'Plain-timer (time.perf_counter_ns) latency of every inference of a capture run, instrumented and not: the overhead of a level is the difference.';
COMMENT ON COLUMN capture_latencies.run_id IS 'The run (capture_runs.run_id).';
COMMENT ON COLUMN capture_latencies.loop IS 'uninstrumented (no hooks, no ranges, profiler not recording) or instrumented (the profiled inferences).';
COMMENT ON COLUMN capture_latencies.iteration IS 'Ordinal of the inference within its loop, from 0; instrumented ones match spans.iteration of the model spans.';
COMMENT ON COLUMN capture_latencies.phase IS 'uninstrumented: interleaved (nsys, torch: alternating with the instrumented inferences) or before or after the instrumented loop (ncu, and torch before 2.4: half each); instrumented: during.';
COMMENT ON COLUMN capture_latencies.latency_ns IS 'Latency of the inference (device synchronized at its end), ns.';

CREATE TABLE IF NOT EXISTS layers (
    run_id INTEGER NOT NULL,
    model VARCHAR,
    layer_index INTEGER NOT NULL,
    name VARCHAR,
    type VARCHAR,
    depth INTEGER,
    range_name VARCHAR,
    input_shapes VARCHAR,
    output_shapes VARCHAR,
    parameter_bytes BIGINT,
    buffer_bytes BIGINT,
    calls_per_inference INTEGER
);
COMMENT ON TABLE layers IS 'The layers of a captured model (from the run manifest), one row per (run, layer); join spans on layer_index.';
COMMENT ON COLUMN layers.run_id IS 'The run (shapes depend on its batch size).';
COMMENT ON COLUMN layers.model IS 'Model name (the xsp.model range name without its prefix).';
COMMENT ON COLUMN layers.layer_index IS 'Index of the layer in module tree order; spans.layer_index of its layer spans.';
COMMENT ON COLUMN layers.name IS 'Qualified module name in the model (<root> when the model itself is the only layer).';
COMMENT ON COLUMN layers.type IS 'Module class name, e.g. Conv2d.';
COMMENT ON COLUMN layers.depth IS 'Components of the qualified name (1 = child of the root).';
COMMENT ON COLUMN layers.range_name IS 'The NVTX / record_function range name of its calls (spans.name).';
COMMENT ON COLUMN layers.input_shapes IS 'JSON: shapes of the positional inputs of its first call in one forward.';
COMMENT ON COLUMN layers.output_shapes IS 'JSON: shapes of the output of that call.';
COMMENT ON COLUMN layers.parameter_bytes IS 'Bytes of the parameters of the module and its submodules.';
COMMENT ON COLUMN layers.buffer_bytes IS 'Bytes of its buffers (e.g. batch-norm running statistics) and its submodules''.';
COMMENT ON COLUMN layers.calls_per_inference IS 'Calls of the module in one forward (0: never called).';

CREATE TABLE IF NOT EXISTS cpu_samples (
    run_id INTEGER NOT NULL,
    sample_id BIGINT NOT NULL,
    ts_ns BIGINT NOT NULL,
    pid BIGINT,
    tid BIGINT,
    cpu INTEGER,
    thread_state VARCHAR,
    function VARCHAR,
    module VARCHAR
);
COMMENT ON TABLE cpu_samples IS 'CPU samples (nsys --sample=cpu: COMPOSITE_EVENTS), one row per sample with the function it caught running; join spans, steps or GPU idle time on (run_id, pid, tid) and ts_ns. The call chain: cpu_sample_frames.';
COMMENT ON COLUMN cpu_samples.run_id IS 'Run of the sample.';
COMMENT ON COLUMN cpu_samples.sample_id IS 'Identifier of the sample within its run (the export''s COMPOSITE_EVENTS.id); cpu_sample_frames.sample_id.';
COMMENT ON COLUMN cpu_samples.ts_ns IS 'When the sample was taken, ns on the run clock.';
COMMENT ON COLUMN cpu_samples.pid IS 'Process of the sampled thread.';
COMMENT ON COLUMN cpu_samples.tid IS 'The sampled thread.';
COMMENT ON COLUMN cpu_samples.cpu IS 'CPU core the thread ran on, where recorded.';
COMMENT ON COLUMN cpu_samples.thread_state IS 'State of the thread when sampled (Running, Waiting, ...: nsys''s thread state labels), where recorded.';
COMMENT ON COLUMN cpu_samples.function IS 'The sampled function: the innermost frame of the call chain (stack depth 0); NULL for a sample without a call chain.';
COMMENT ON COLUMN cpu_samples.module IS 'Binary or library of that function (path as nsys resolved it).';

CREATE TABLE IF NOT EXISTS cpu_sample_frames (
    run_id INTEGER NOT NULL,
    sample_id BIGINT NOT NULL,
    depth INTEGER NOT NULL,
    function VARCHAR,
    module VARCHAR
);
COMMENT ON TABLE cpu_sample_frames IS 'Call chains of the CPU samples (nsys SAMPLING_CALLCHAINS), one row per (sample, frame).';
COMMENT ON COLUMN cpu_sample_frames.run_id IS 'Run of the sample.';
COMMENT ON COLUMN cpu_sample_frames.sample_id IS 'The sample (cpu_samples.sample_id).';
COMMENT ON COLUMN cpu_sample_frames.depth IS 'Position in the call chain from 0: the sampled function; depth + 1 is its caller.';
COMMENT ON COLUMN cpu_sample_frames.function IS 'Function name (a hexadecimal address where nsys could not resolve it).';
COMMENT ON COLUMN cpu_sample_frames.module IS 'Binary or library of the function.';

CREATE TABLE IF NOT EXISTS thread_states (
    run_id INTEGER NOT NULL,
    pid BIGINT,
    tid BIGINT,
    cpu INTEGER,
    state VARCHAR NOT NULL,
    start_ns BIGINT NOT NULL,
    end_ns BIGINT NOT NULL
);
COMMENT ON TABLE thread_states IS 'What each thread did between two of its scheduling events (nsys SCHED_EVENTS), one row per event: running from a switch in, descheduled from a switch out, until the thread''s next event (its last until the run''s last scheduling event).';
COMMENT ON COLUMN thread_states.run_id IS 'Run of the thread.';
COMMENT ON COLUMN thread_states.pid IS 'Process of the thread.';
COMMENT ON COLUMN thread_states.tid IS 'The thread.';
COMMENT ON COLUMN thread_states.cpu IS 'CPU core it was switched in on or out of.';
COMMENT ON COLUMN thread_states.state IS 'running (switched in) or descheduled (switched out: waiting, blocked or preempted).';
COMMENT ON COLUMN thread_states.start_ns IS 'The switch, ns on the run clock.';
COMMENT ON COLUMN thread_states.end_ns IS 'The thread''s next switch (exclusive), ns on the run clock.';

CREATE TABLE IF NOT EXISTS span_sources (
    run_id INTEGER NOT NULL,
    span_id BIGINT NOT NULL,
    source VARCHAR NOT NULL
);
COMMENT ON TABLE span_sources IS 'Where each span of a run merged from two profilers of one execution came from (convert --one-execution); no rows for a run read from one trace.';
COMMENT ON COLUMN span_sources.run_id IS 'The merged run.';
COMMENT ON COLUMN span_sources.span_id IS 'The span (spans.span_id).';
COMMENT ON COLUMN span_sources.source IS 'nsys, kineto, or both: a range both recorded, kept once as the nsys row with the Kineto span_args added.';

CREATE TABLE IF NOT EXISTS one_execution_alignments (
    run_id INTEGER NOT NULL,
    source_kind VARCHAR NOT NULL,
    source_path VARCHAR,
    offset_ns BIGINT NOT NULL,
    spread_ns BIGINT NOT NULL,
    paired_spans BIGINT NOT NULL,
    tolerance_ns BIGINT NOT NULL
);
COMMENT ON TABLE one_execution_alignments IS 'How a second trace of the same execution was put on the run clock (convert --one-execution): one row per trace merged into the run.';
COMMENT ON COLUMN one_execution_alignments.run_id IS 'The merged run (its clock is the nsys session clock).';
COMMENT ON COLUMN one_execution_alignments.source_kind IS 'What the merged trace was: kineto.';
COMMENT ON COLUMN one_execution_alignments.source_path IS 'Path of the merged trace.';
COMMENT ON COLUMN one_execution_alignments.offset_ns IS 'Added to the trace''s times to put them on the run clock: the absolute-clock offset refined by the paired ranges: the middle of the offsets under which every NVTX range encloses its annotation.';
COMMENT ON COLUMN one_execution_alignments.spread_ns IS 'Width of the offsets under which every paired NVTX range encloses its annotation: the alignment is exact to within half of it.';
COMMENT ON COLUMN one_execution_alignments.paired_spans IS 'Ranges both traces recorded (same name, same thread), merged into one span each.';
COMMENT ON COLUMN one_execution_alignments.tolerance_ns IS 'The largest spread convert accepts; beyond it, or when no offset makes the pairs enclose each other, the two traces are refused as not one execution.';
