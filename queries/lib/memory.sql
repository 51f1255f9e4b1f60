-- lib/memory: the allocator's events as allocations -- each matched to its free by address, owned by
-- the op and layer that made it -- the bytes in use after every event, and the peak of every
-- process and device with the allocations live at it.
-- include: lib/layers
--
-- From: memory_events (Kineto [memory] events), spans and span_ancestors (the CPU spans around an
-- event on its thread), span_args (the owner op's "Input Dims": a variable set from
-- xsp_trace/formats/kineto_fields.py) and xsp_layer_ranges (lib/layers: xsp.layer ranges, or the
-- ranges --layer-ranges names).
-- Order: a process's events on one device in (time, position in the trace): the allocator's own
-- order, which its "Total Allocated" follows. A free is the next event at the block's address when
-- that event frees; an allocation whose address is not recorded (Kineto before 2022) or that is not
-- freed in the trace stays live to the end.
-- Owner: the innermost op (kind op) on the event's thread whose [start, end] holds the event (an
-- event at an op's end still belongs to it: microsecond traces round both to one tick); layer: the
-- innermost layer range so holding it. Both are found from the last CPU span on the thread to start
-- at or before the event and that span's ancestors: an op holding the event starts before it, so
-- encloses that span.

-- Every memory event with its order in its (run, process, device) and the bytes in use after it: the
-- trace's "Total Allocated" where recorded, else the sum of the bytes since the trace began.
CREATE OR REPLACE TEMP VIEW _xsp_memory_events AS
SELECT *,
       coalesce(total_allocated, sum(bytes) OVER (PARTITION BY run_id, pid, device_key ORDER BY seq)) AS in_use_bytes
FROM (SELECT e.*, coalesce(e.device_id, -1) AS device_key,
             row_number() OVER (PARTITION BY e.run_id, e.pid, coalesce(e.device_id, -1) ORDER BY e.ts_ns, e.event_index) AS seq
      FROM memory_events AS e);

-- The owner op and layer of every memory event.
CREATE OR REPLACE TEMP VIEW _xsp_memory_owners AS
WITH cpu_starts AS (
    -- One span per thread and start time: the deepest (the innermost of spans starting together);
    -- only threads that allocate.
    SELECT s.run_id, s.pid, s.tid, s.start_ns, arg_max(s.span_id, s.depth) AS span_id
    FROM spans AS s
    SEMI JOIN (SELECT DISTINCT run_id, pid, tid FROM memory_events) AS m ON m.run_id = s.run_id AND m.pid = s.pid AND m.tid = s.tid
    WHERE s.tid IS NOT NULL
    GROUP BY ALL
), anchored AS (
    SELECT e.run_id, e.pid, e.device_key, e.seq, e.ts_ns, c.span_id AS anchor_id
    FROM _xsp_memory_events AS e
    ASOF LEFT JOIN cpu_starts AS c ON c.run_id = e.run_id AND c.pid = e.pid AND c.tid = e.tid AND c.start_ns <= e.ts_ns
), holding AS (
    -- The anchor and its ancestors that hold the event, by nearness (0: the anchor itself).
    SELECT a.run_id, a.pid, a.device_key, a.seq, s.span_id, s.kind, s.name, h.distance
    FROM anchored AS a
    JOIN (SELECT DISTINCT run_id, anchor_id AS span_id, anchor_id AS ancestor_id, 0 AS distance FROM anchored
          UNION ALL SELECT run_id, span_id, ancestor_id, distance FROM span_ancestors
          WHERE span_id IN (SELECT anchor_id FROM anchored)) AS h
      ON h.run_id = a.run_id AND h.span_id = a.anchor_id
    JOIN spans AS s ON s.run_id = h.run_id AND s.span_id = h.ancestor_id
    WHERE s.start_ns <= a.ts_ns AND a.ts_ns <= s.end_ns
), owners AS (
    SELECT h.run_id, h.pid, h.device_key, h.seq,
           arg_min(h.span_id, h.distance) FILTER (WHERE h.kind = 'op') AS op_span_id,
           arg_min(h.span_id, h.distance) FILTER (WHERE l.span_id IS NOT NULL) AS layer_span_id
    FROM holding AS h
    LEFT JOIN xsp_layer_ranges AS l ON l.run_id = h.run_id AND l.span_id = h.span_id
    GROUP BY ALL
)
SELECT e.run_id, e.pid, e.device_key, e.seq, o.op_span_id, o.layer_span_id
FROM _xsp_memory_events AS e
LEFT JOIN owners AS o USING (run_id, pid, device_key, seq);

-- One row per allocation: when it was made and freed (NULL: live at the trace's end), by whom.
CREATE OR REPLACE TEMP VIEW xsp_allocations AS
WITH paired AS (
    SELECT *,
           lead(seq) OVER w AS next_seq, lead(bytes) OVER w AS next_bytes, lead(ts_ns) OVER w AS next_ts_ns
    FROM _xsp_memory_events
    WINDOW w AS (PARTITION BY run_id, pid, device_key, addr ORDER BY seq)
)
SELECT
    -- Run.
    p.run_id,
    -- Process whose allocator made it.
    p.pid,
    -- Thread that allocated.
    p.tid,
    -- GPU the block is on; NULL for host memory.
    p.device_id,
    -- The same, -1 for host memory (a key to group and join on).
    p.device_key,
    -- Address of the block; NULL where the trace does not record it.
    p.addr,
    -- Bytes allocated.
    p.bytes,
    -- Order of the allocation among its process's events on the device (lib/memory: Order).
    p.seq AS alloc_seq,
    -- Time of the allocation, ns on the run clock.
    p.ts_ns AS alloc_ns,
    -- Order of its free: the next event at its address, when that frees; NULL if not freed in the trace.
    CASE WHEN p.addr IS NOT NULL AND p.next_bytes < 0 THEN p.next_seq END AS free_seq,
    -- Time of its free, ns on the run clock; NULL if not freed in the trace.
    CASE WHEN p.addr IS NOT NULL AND p.next_bytes < 0 THEN p.next_ts_ns END AS free_ns,
    -- The innermost op on the allocating thread around it (spans.span_id); NULL outside every op.
    o.op_span_id,
    -- That op's name.
    op.name AS op_name,
    -- That op's recorded operand shapes ("Input Dims", JSON), where recorded.
    d.value AS op_input_dims,
    -- The innermost layer range on the allocating thread around it; NULL outside every one.
    o.layer_span_id,
    -- That layer's name.
    l.layer_name
FROM paired AS p
JOIN _xsp_memory_owners AS o USING (run_id, pid, device_key, seq)
LEFT JOIN spans AS op ON op.run_id = p.run_id AND op.span_id = o.op_span_id
LEFT JOIN span_args AS d ON d.run_id = p.run_id AND d.span_id = o.op_span_id AND d.key = getvariable('xsp_arg_input_dims')
LEFT JOIN xsp_layer_ranges AS l ON l.run_id = p.run_id AND l.span_id = o.layer_span_id
WHERE p.bytes > 0;

-- The peak of every process and device: the first event after which the most bytes were in use.
CREATE OR REPLACE TEMP VIEW xsp_memory_peaks AS
SELECT
    -- Run.
    run_id,
    -- Process whose allocator it is.
    pid,
    -- GPU, -1 for host memory.
    device_key,
    -- GPU; NULL for host memory.
    any_value(device_id) AS device_id,
    -- Order of the peak event (lib/memory: Order).
    arg_max(seq, (in_use_bytes, -seq)) AS peak_seq,
    -- Time of the peak event, ns on the run clock.
    arg_max(ts_ns, (in_use_bytes, -seq)) AS peak_ns,
    -- Bytes in use after it: the trace's "Total Allocated", else the sum of the events' bytes since the trace began.
    max(in_use_bytes) AS peak_bytes,
    -- Bytes in use before the first event: allocated before the trace began (0 without "Total Allocated").
    arg_min(in_use_bytes - bytes, seq) AS before_trace_bytes,
    -- Memory events of the process and device.
    count(*) AS events,
    -- Whether every event records its block's address (else frees cannot be matched to allocations).
    count(addr) = count(*) AS addressed
FROM _xsp_memory_events
GROUP BY run_id, pid, device_key;

-- The allocations live at each peak (made at or before it, freed after it or never).
CREATE OR REPLACE TEMP VIEW xsp_memory_peak_allocations AS
SELECT
    -- Run.
    a.run_id,
    -- Process whose allocator made it.
    a.pid,
    -- GPU, -1 for host memory.
    a.device_key,
    -- Bytes allocated.
    a.bytes,
    -- Order of the allocation (lib/memory: Order).
    a.alloc_seq,
    -- Name of the innermost op around it; NULL outside every op.
    a.op_name,
    -- That op's recorded operand shapes ("Input Dims", JSON), where recorded.
    a.op_input_dims,
    -- Name of the innermost layer range around it; NULL outside every one.
    a.layer_name,
    -- Order of the peak event.
    p.peak_seq
FROM xsp_allocations AS a
JOIN xsp_memory_peaks AS p USING (run_id, pid, device_key)
WHERE a.alloc_seq <= p.peak_seq AND (a.free_seq IS NULL OR a.free_seq > p.peak_seq);
