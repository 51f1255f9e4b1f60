-- analyses/comm_compute_split: how each GPU's busy time divides between computation,
-- communication and memory operations, overlaps counted once in their own row ("computation+
-- communication": both running) -- Holistic Trace Analysis's kernel-type breakdown
-- (get_gpu_kernel_breakdown, "COMPUTATION overlapping COMMUNICATION").
--
-- From: xsp_gpu_class_segments (prelude): kernels, memcpys and memsets classed by
-- xsp_gpu_work_class (NCCL/RCCL kernels are communication; xsp_trace/formats/collectives.py),
-- each class's intervals merged over all streams of the GPU, the timeline cut where any changes.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts with include_last_profiler_step=True (its default also drops
-- the work launched in the last step; lib/scope.sql says which work is left out).
--
-- title: GPU time: computation, communication, memory and their overlaps
-- group: comm
-- include: lib/gpu_work
-- columns: run_id INTEGER, device_id INTEGER, classes VARCHAR, time_ns HUGEINT, time_pct DOUBLE
SELECT
    -- Run.
    run_id,
    -- The GPU.
    device_id,
    -- The classes running together in this share of the time: computation, communication, memory,
    -- or several joined by '+'.
    classes,
    -- Time during which exactly these classes were running, ns (GPU work of the scope).
    sum(end_ns - start_ns) AS time_ns,
    -- Share of the GPU's busy time (the union of all three classes), percent.
    round(100.0 * sum(end_ns - start_ns) / sum(sum(end_ns - start_ns)) OVER (PARTITION BY run_id, device_id), 2) AS time_pct
FROM xsp_gpu_class_segments
GROUP BY run_id, device_id, classes
ORDER BY run_id, device_id, time_ns DESC, classes;
