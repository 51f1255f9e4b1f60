-- analyses/memory_by_op: the memory every op and every layer allocates (XSP's per-layer memory,
-- from allocation events, without capture ranges): its allocations, their bytes and lifetimes, and
-- what it still holds at the peak and at the trace's end.
--
-- From: xsp_allocations (lib/memory: Kineto [memory] events matched to their frees by address, each
-- owned by the innermost op and layer range around it on its thread), xsp_memory_peak_allocations
-- and xsp_memory_peaks (lib/memory). Lifetimes and bytes held at the end need the block addresses,
-- which Kineto records since 2022: without them those columns are NULL.
--
-- title: Memory each op and layer allocates (allocation events)
-- group: layer
-- include: lib/layers, lib/memory
-- columns: run_id INTEGER, device_id INTEGER, level VARCHAR, name VARCHAR, allocations BIGINT,
--     allocated_bytes HUGEINT, largest_bytes BIGINT, mean_lifetime_us DOUBLE, peak_bytes HUGEINT,
--     live_at_end_bytes HUGEINT, shapes VARCHAR[]
WITH owned AS (
    SELECT 'op' AS level, coalesce(op_name, '(no op)') AS name, * FROM xsp_allocations
    UNION ALL
    SELECT 'layer', coalesce(layer_name, '(no layer)'), * FROM xsp_allocations
    WHERE run_id IN (SELECT run_id FROM xsp_layer_ranges)
), at_peak AS (
    SELECT run_id, device_key, pid, alloc_seq, bytes FROM xsp_memory_peak_allocations
)
SELECT
    -- Run.
    o.run_id,
    -- Device the memory is on (CUDA/HIP ordinal; -1 for host memory).
    o.device_key AS device_id,
    -- op: the innermost op around the allocation on its thread; layer: the innermost layer range around it.
    o.level,
    -- The op or layer name; (no op) / (no layer) for allocations outside every one.
    o.name,
    -- Allocations it made.
    count(*) AS allocations,
    -- Their bytes, summed.
    sum(o.bytes) AS allocated_bytes,
    -- Its largest allocation, bytes.
    max(o.bytes) AS largest_bytes,
    -- Mean time from allocation to free, microseconds, over the allocations freed in the trace (NULL without addresses).
    round(avg(o.free_ns - o.alloc_ns) FILTER (WHERE o.free_ns IS NOT NULL) / 1e3, 3) AS mean_lifetime_us,
    -- Bytes of its allocations live at the peak of their process and device (NULL without addresses).
    CASE WHEN bool_and(p.addressed) THEN coalesce(sum(k.bytes), 0) END AS peak_bytes,
    -- Bytes of its allocations never freed in the trace (NULL without addresses).
    CASE WHEN bool_and(p.addressed) THEN coalesce(sum(o.bytes) FILTER (WHERE o.free_seq IS NULL), 0) END AS live_at_end_bytes,
    -- The distinct "Input Dims" of its allocating ops (JSON, up to 3), where recorded.
    (list(DISTINCT o.op_input_dims ORDER BY o.op_input_dims) FILTER (WHERE o.op_input_dims IS NOT NULL))[:3] AS shapes
FROM owned AS o
JOIN xsp_memory_peaks AS p USING (run_id, pid, device_key)
LEFT JOIN at_peak AS k ON k.run_id = o.run_id AND k.device_key = o.device_key AND k.pid = o.pid AND k.alloc_seq = o.alloc_seq
GROUP BY o.run_id, o.device_key, o.level, o.name
ORDER BY o.run_id, o.device_key < 0, o.device_key, o.level DESC, allocated_bytes DESC, o.name;
