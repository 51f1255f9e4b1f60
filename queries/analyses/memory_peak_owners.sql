-- analyses/memory_peak_owners: what holds the memory at the peak of every process and device -- the
-- ops (level op) and layers (level layer) whose allocations are live at the event after which the
-- allocator had the most bytes in use, with the bytes each holds and the shapes its ops recorded.
-- At each level the rows add up to the peak: "(allocated before the trace)" is what was in use
-- before the first event and not freed by the peak, "(no op)" / "(no layer)" what no op / layer
-- range held when it was allocated. Layer rows only for runs with layer ranges.
--
-- From: xsp_memory_peaks and xsp_memory_peak_allocations (lib/memory: Kineto [memory] events
-- matched by address, owners from the CPU spans around each event), runs (origin_ns: the peak time
-- is relative to it). A trace whose events carry no address (Kineto before 2022) has a peak but no
-- owners: its frees cannot be matched, so one row says so.
--
-- title: What holds the memory at each peak: ops and layers (allocation events)
-- group: layer
-- include: lib/layers, lib/memory
-- columns: run_id INTEGER, device_id INTEGER, pid BIGINT, peak_at_ns BIGINT, peak_bytes HUGEINT, level
--     VARCHAR, name VARCHAR, bytes HUGEINT, peak_pct DOUBLE, allocations BIGINT, shapes VARCHAR[]
WITH owned AS (
    SELECT run_id, pid, device_key, 'op' AS level, coalesce(op_name, '(no op)') AS name,
           sum(bytes) AS bytes, count(*) AS allocations,
           list(DISTINCT op_input_dims ORDER BY op_input_dims) FILTER (WHERE op_input_dims IS NOT NULL) AS shapes
    FROM xsp_memory_peak_allocations
    GROUP BY ALL
    UNION ALL
    SELECT a.run_id, a.pid, a.device_key, 'layer', coalesce(a.layer_name, '(no layer)'),
           sum(a.bytes), count(*), list(DISTINCT a.op_input_dims ORDER BY a.op_input_dims) FILTER (WHERE a.op_input_dims IS NOT NULL)
    FROM xsp_memory_peak_allocations AS a
    WHERE a.run_id IN (SELECT run_id FROM xsp_layer_ranges)
    GROUP BY ALL
), levels AS (
    SELECT DISTINCT run_id, pid, device_key, level FROM owned
), rows AS (
    SELECT o.* FROM owned AS o JOIN xsp_memory_peaks AS p USING (run_id, pid, device_key) WHERE p.addressed
    UNION ALL
    -- What the peak holds beyond the trace's own live allocations: allocated before it began.
    SELECT l.run_id, l.pid, l.device_key, l.level, '(allocated before the trace)',
           p.peak_bytes - (SELECT sum(o.bytes) FROM owned AS o WHERE o.run_id = l.run_id AND o.pid = l.pid AND o.device_key = l.device_key AND o.level = l.level),
           NULL, NULL
    FROM levels AS l JOIN xsp_memory_peaks AS p USING (run_id, pid, device_key)
    WHERE p.addressed
    UNION ALL
    SELECT run_id, pid, device_key, 'op', '(unknown: the trace records no block addresses)', peak_bytes, NULL, NULL
    FROM xsp_memory_peaks WHERE NOT addressed
)
SELECT
    -- Run.
    r.run_id,
    -- Device the memory is on (CUDA/HIP ordinal; -1 for host memory).
    r.device_key AS device_id,
    -- Process whose allocator it is.
    r.pid,
    -- Time of the peak event, ns after the run's first event (runs.origin_ns).
    p.peak_ns - u.origin_ns AS peak_at_ns,
    -- Bytes in use after the peak event: the trace's "Total Allocated", else the sum of the events' bytes since the trace began.
    p.peak_bytes,
    -- op: the innermost op that made the allocation; layer: the innermost layer range around it.
    r.level,
    -- The op or layer name, or one of the rows in parentheses (header).
    r.name,
    -- Bytes of its allocations live at the peak.
    r.bytes,
    -- Share of the peak, percent.
    round(100.0 * r.bytes / nullif(p.peak_bytes, 0), 2) AS peak_pct,
    -- Its allocations live at the peak.
    r.allocations,
    -- The distinct "Input Dims" its ops recorded for those allocations (JSON, up to 3), where recorded.
    r.shapes[:3] AS shapes
FROM rows AS r
JOIN xsp_memory_peaks AS p USING (run_id, pid, device_key)
JOIN runs AS u USING (run_id)
ORDER BY r.run_id, r.device_key < 0, r.device_key, r.pid, r.level DESC, r.bytes DESC, r.name;
