-- ingest/kineto_link: moves one Kineto run's staged spans into `spans`, with launch correlation ids
-- completed and GPU work attributed to the host process that launched it.
--
-- From the temp tables xsp_trace.convert.kineto writes for run getvariable('xsp_run_id'):
--   _kineto_spans          every span, with its raw Chrome-trace track (track_pid, track_tid) and
--                          External id (0 = none is already NULL);
--   _kineto_flows          launch flow events: 's' on the CPU launch, 'f' on the GPU activity,
--                          their id being the correlation id;
--   _kineto_launch_config  grid/block of launch API calls (ROCm writes them there, not on the kernel);
--   _kineto_name_events    metadata events naming processes and threads, by event index.
-- Writes spans, updates kernels, and _kineto_names: the name of each process and thread.
-- Rules for spans whose event had no args.correlation (older traces), in this order:
--   1. API call: the id of the 's' launch flow on its thread at its start (Kineto writes it there).
--   2. GPU span: the id of the 'f' launch flow on its (device pid, stream) track at its start;
--      the largest when several start there (correlation ids grow with time: the latest launch).
--   3. API call still without one: a synthetic id -span_id (negative, so never a CUPTI id).
--   4. GPU span still without one: the k-th GPU span (by start) of an External id takes the id of
--      the k-th API call (by start) of that External id that no GPU span claims yet.
--   5. GPU span still without one whose External id is that of a CUDA/HIP graph launch call
--      (getvariable('kineto_graph_launch_apis')): the id of the latest such call of that External
--      id started no later than the span. A graph replay runs all its nodes under the launch's
--      correlation and External id, so rule 4 gives the launch only the first of them.
-- GPU spans (tid NULL) get the pid of the API call with their correlation id, else the process
-- owning the most CPU spans (Kineto writes GPU events under a per-device pseudo pid).

UPDATE _kineto_spans SET correlation_id = f.flow_id
FROM (
    SELECT s.span_id, min(f.flow_id) AS flow_id
    FROM _kineto_spans AS s
    JOIN _kineto_flows AS f
      ON f.phase = 's' AND f.pid = s.track_pid AND f.tid = s.track_tid AND f.ts_ns = s.start_ns
    WHERE s.kind = 'api' AND s.correlation_id IS NULL
    GROUP BY s.span_id
) AS f
WHERE _kineto_spans.span_id = f.span_id;

UPDATE _kineto_spans SET correlation_id = f.flow_id
FROM (
    SELECT s.span_id, max(f.flow_id) AS flow_id
    FROM _kineto_spans AS s
    JOIN _kineto_flows AS f
      ON f.phase = 'f' AND f.pid = s.track_pid AND f.tid = s.track_tid AND f.ts_ns = s.start_ns
    WHERE s.tid IS NULL AND s.kind IN ('kernel', 'memcpy', 'memset', 'sync') AND s.correlation_id IS NULL
    GROUP BY s.span_id
) AS f
WHERE _kineto_spans.span_id = f.span_id;

UPDATE _kineto_spans SET correlation_id = -span_id
WHERE kind = 'api' AND correlation_id IS NULL;

UPDATE _kineto_spans SET correlation_id = m.correlation_id
FROM (
    WITH unclaimed AS (
        SELECT a.external_id, a.correlation_id,
               row_number() OVER (PARTITION BY a.external_id ORDER BY a.start_ns, a.span_id) AS k
        FROM _kineto_spans AS a
        WHERE a.kind = 'api' AND a.external_id IS NOT NULL
          AND a.correlation_id NOT IN (
              SELECT correlation_id FROM _kineto_spans
              WHERE tid IS NULL AND correlation_id IS NOT NULL)
    ),
    orphans AS (
        SELECT span_id, external_id,
               row_number() OVER (PARTITION BY external_id ORDER BY start_ns, span_id) AS k
        FROM _kineto_spans
        WHERE tid IS NULL AND kind IN ('kernel', 'memcpy', 'memset', 'sync')
          AND correlation_id IS NULL AND external_id IS NOT NULL
    )
    SELECT o.span_id, u.correlation_id
    FROM orphans AS o JOIN unclaimed AS u ON u.external_id = o.external_id AND u.k = o.k
) AS m
WHERE _kineto_spans.span_id = m.span_id;

UPDATE _kineto_spans SET correlation_id = m.correlation_id
FROM (
    SELECT o.span_id, arg_max(a.correlation_id, (a.start_ns, a.span_id)) AS correlation_id
    FROM _kineto_spans AS o
    JOIN _kineto_spans AS a
      ON a.kind = 'api' AND a.external_id = o.external_id AND a.start_ns <= o.start_ns
     AND list_contains(getvariable('kineto_graph_launch_apis'), a.name)
    WHERE o.tid IS NULL AND o.kind IN ('kernel', 'memcpy', 'memset', 'sync')
      AND o.correlation_id IS NULL AND o.external_id IS NOT NULL
    GROUP BY o.span_id
) AS m
WHERE _kineto_spans.span_id = m.span_id;

INSERT INTO spans (run_id, span_id, kind, name, category, start_ns, end_ns, pid, tid,
                   device_id, stream_id, correlation_id, layer_index)
WITH
    host AS (
        SELECT pid FROM _kineto_spans WHERE tid IS NOT NULL
        GROUP BY pid ORDER BY count(*) DESC, pid LIMIT 1
    ),
    launcher AS (
        SELECT correlation_id, min(pid) AS pid FROM _kineto_spans
        WHERE kind = 'api' GROUP BY correlation_id
    )
SELECT
    -- Run being converted.
    getvariable('xsp_run_id'),
    -- Span id assigned in event order.
    s.span_id,
    -- Kind from the Kineto category (user annotations classified by xsp_trace.naming).
    s.kind,
    -- The Kineto event name.
    s.name,
    -- The Kineto category as written (cpu_op, cuda_runtime, kernel, Runtime, ...).
    s.category,
    -- Start, integer ns.
    s.start_ns,
    -- End, integer ns.
    s.end_ns,
    -- CPU spans: their process; GPU spans: the process that launched them.
    CASE WHEN s.tid IS NULL THEN coalesce(l.pid, (SELECT pid FROM host)) ELSE s.pid END,
    -- CPU thread; NULL on the GPU.
    s.tid,
    -- GPU device ordinal (args.device, else the device pseudo pid).
    s.device_id,
    -- GPU stream (args.stream, else the track's tid); NULL for device-wide syncs.
    s.stream_id,
    -- Launch correlation id after the fallbacks above.
    s.correlation_id,
    -- Layer index of xsp.layer annotations.
    s.layer_index
FROM _kineto_spans AS s
LEFT JOIN launcher AS l ON s.tid IS NULL AND l.correlation_id = s.correlation_id;

UPDATE kernels
SET grid_x = c.grid_x, grid_y = c.grid_y, grid_z = c.grid_z,
    block_x = c.block_x, block_y = c.block_y, block_z = c.block_z,
    shared_mem_bytes = coalesce(kernels.shared_mem_bytes, c.shared_mem_bytes)
FROM (
    SELECT g.span_id, any_value(c.grid_x) AS grid_x, any_value(c.grid_y) AS grid_y, any_value(c.grid_z) AS grid_z,
           any_value(c.block_x) AS block_x, any_value(c.block_y) AS block_y, any_value(c.block_z) AS block_z,
           any_value(c.shared_mem_bytes) AS shared_mem_bytes
    FROM _kineto_launch_config AS c
    JOIN spans AS g
      ON g.run_id = getvariable('xsp_run_id') AND g.kind = 'kernel'
     AND g.pid = c.pid AND g.correlation_id = c.correlation_id
    GROUP BY g.span_id
) AS c
WHERE kernels.run_id = getvariable('xsp_run_id') AND kernels.span_id = c.span_id AND kernels.grid_x IS NULL;

-- Names from metadata events: the last one in the file wins, as in the trace viewer (kineto_map.sql
-- collected them piece by piece).
CREATE OR REPLACE TEMP TABLE _kineto_names AS
SELECT what, pid, tid, arg_max(value, event_index) AS value
FROM _kineto_name_events
GROUP BY ALL;
