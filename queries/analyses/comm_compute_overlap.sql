-- analyses/comm_compute_overlap: how much of each GPU's communication runs while it computes --
-- Holistic Trace Analysis's comm/compute overlap (get_comm_comp_overlap: time with both a
-- communication and a computation kernel running / time with a communication kernel running) --
-- with the exposed (not overlapped) communication and the compute/communication split.
--
-- From: xsp_gpu_class_segments (prelude): kernels classed as communication (NCCL/RCCL) or
-- computation (xsp_trace/formats/collectives.py), each class merged over all streams of the GPU.
-- Memory copies neither add to nor take from the overlap.
-- Counts: every kernel, copy and set the session holds -- under `analyze --scope all` (the
-- default) all of the trace's, also work launched before the trace started (no launching call in
-- it) or after its last step; under --scope profiled only work launched in the profiled steps, as
-- Holistic Trace Analysis 0.5 counts with include_last_profiler_step=True (its default also drops
-- the work launched in the last step; lib/scope.sql says which work is left out).
--
-- title: Communication overlapped by computation
-- group: comm
-- include: lib/gpu_work
-- columns: run_id INTEGER, rank INTEGER, device_id INTEGER, computation_ns HUGEINT, communication_ns HUGEINT,
--     overlap_ns HUGEINT, overlap_pct DOUBLE, exposed_communication_ns HUGEINT, computation_pct DOUBLE,
--     communication_pct DOUBLE, memory_ns HUGEINT
WITH per_gpu AS (
    SELECT run_id, device_id,
           sum(end_ns - start_ns) AS busy_ns,
           coalesce(sum(end_ns - start_ns) FILTER (WHERE state & 1 = 1), 0) AS computation_ns,
           coalesce(sum(end_ns - start_ns) FILTER (WHERE state & 2 = 2), 0) AS communication_ns,
           coalesce(sum(end_ns - start_ns) FILTER (WHERE state & 3 = 3), 0) AS overlap_ns,
           coalesce(sum(end_ns - start_ns) FILTER (WHERE state & 4 = 4), 0) AS memory_ns
    FROM xsp_gpu_class_segments
    GROUP BY run_id, device_id
)
SELECT
    -- Run.
    p.run_id,
    -- Its distributed rank, where the trace says (NULL otherwise).
    r.rank,
    -- The GPU.
    p.device_id,
    -- Time with any computation kernel of the scope running, ns (intervals merged over streams).
    computation_ns,
    -- Time with any communication (NCCL/RCCL) kernel of the scope running, ns (merged over streams).
    communication_ns,
    -- Time with a computation and a communication kernel running at once, ns.
    overlap_ns,
    -- Communication overlapped by computation, percent of the communication time (HTA's figure).
    round(100.0 * overlap_ns / nullif(communication_ns, 0), 2) AS overlap_pct,
    -- Communication not hidden behind computation, ns.
    communication_ns - overlap_ns AS exposed_communication_ns,
    -- Computation time as a share of the GPU's busy time (union of computation, communication and
    -- memory operations), percent; with overlap it and communication_pct can add up to over 100.
    round(100.0 * computation_ns / nullif(busy_ns, 0), 2) AS computation_pct,
    -- Communication time as a share of the GPU's busy time, percent.
    round(100.0 * communication_ns / nullif(busy_ns, 0), 2) AS communication_pct,
    -- Time with a memory copy or set running, ns.
    memory_ns
FROM per_gpu AS p
JOIN runs AS r USING (run_id)
ORDER BY p.run_id, p.device_id;
