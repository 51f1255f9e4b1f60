-- analyses/layer_allocations: memory each layer allocates while it runs (XSP's layer memory from
-- allocation events, beside layer_memory's parameter bytes): for every layer call, the caching
-- allocator's "Total Allocated" just before it starts, at its end, and at its highest inside it.
--
-- From: counters (the samples of the profiler's [memory] events; the counter name is a variable set
-- from xsp_trace/formats/kineto_fields.py), the layer calls of xsp_layer_ranges (xsp.layer ranges
-- or --layer-ranges), and spans (the layer's process).
--
-- title: Memory each layer allocates while it runs (allocation events)
-- group: layer
-- include: lib/layers
-- columns: run_id INTEGER, device_id INTEGER, layer_index INTEGER, layer_name VARCHAR, layer_type VARCHAR,
--     calls BIGINT, allocation_events HUGEINT, net_allocated_bytes DOUBLE, peak_increase_bytes DOUBLE,
--     max_peak_increase_bytes DOUBLE, peak_allocated_bytes DOUBLE
WITH samples AS (
    SELECT run_id, pid, coalesce(device_id, -1) AS device_id, ts_ns, value
    FROM counters WHERE name = getvariable('xsp_counter_allocated')
), calls AS (
    SELECT l.run_id, l.span_id, l.layer_index, l.layer_name, l.layer_type, l.start_ns, l.end_ns, s.pid, d.device_id
    FROM xsp_layer_ranges AS l
    JOIN spans AS s ON s.run_id = l.run_id AND s.span_id = l.span_id
    JOIN (SELECT DISTINCT run_id, pid, device_id FROM samples) AS d ON d.run_id = l.run_id AND d.pid = s.pid
), at_start AS (
    SELECT c.*, v.value AS start_bytes
    FROM calls AS c ASOF LEFT JOIN samples AS v
      ON v.run_id = c.run_id AND v.pid = c.pid AND v.device_id = c.device_id AND v.ts_ns < c.start_ns
), at_end AS (
    SELECT c.*, v.value AS end_bytes
    FROM at_start AS c ASOF LEFT JOIN samples AS v
      ON v.run_id = c.run_id AND v.pid = c.pid AND v.device_id = c.device_id AND v.ts_ns <= c.end_ns
), per_call AS (
    SELECT c.run_id, c.span_id, c.layer_index, c.layer_name, c.layer_type, c.device_id,
           -- NULL when no sample precedes the call: the level before the first recorded event is unknown.
           any_value(c.start_bytes) AS start_bytes,
           coalesce(any_value(c.end_bytes), any_value(c.start_bytes)) AS end_bytes,
           greatest(max(v.value), any_value(c.start_bytes)) AS peak_bytes,
           count(v.ts_ns) AS events
    FROM at_end AS c
    LEFT JOIN samples AS v ON v.run_id = c.run_id AND v.pid = c.pid AND v.device_id = c.device_id
                          AND v.ts_ns >= c.start_ns AND v.ts_ns <= c.end_ns
    GROUP BY c.run_id, c.span_id, c.layer_index, c.layer_name, c.layer_type, c.device_id
)
SELECT
    -- Run.
    run_id,
    -- Device the allocator counts for (CUDA ordinal; -1 for host memory).
    device_id,
    -- Layer index (first appearance order for --layer-ranges layers).
    layer_index,
    -- Layer name.
    layer_name,
    -- Layer type.
    any_value(layer_type) AS layer_type,
    -- Layer calls.
    count(*) AS calls,
    -- Allocation events inside the calls.
    sum(events) AS allocation_events,
    -- Mean net change of allocated memory over one call (end - start), bytes: what the layer leaves
    -- allocated (calls before the first recorded allocation event are left out: their start is unknown).
    round(avg(end_bytes - start_bytes), 1) AS net_allocated_bytes,
    -- Mean rise of allocated memory above its level at the call's start (peak - start), bytes: the layer's working memory.
    round(avg(peak_bytes - start_bytes), 1) AS peak_increase_bytes,
    -- Largest such rise over all calls, bytes.
    max(peak_bytes - start_bytes) AS max_peak_increase_bytes,
    -- Highest allocated memory seen during any call, bytes.
    max(peak_bytes) AS peak_allocated_bytes
FROM per_call
GROUP BY run_id, device_id, layer_index, layer_name
ORDER BY run_id, device_id < 0, device_id, layer_index;
