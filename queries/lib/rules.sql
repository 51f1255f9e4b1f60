-- lib/rules: what the expert rules (queries/analyses/cuda_async_memcpy.sql,
-- cuda_sync_memcpy, cuda_sync_memset, cuda_sync_api, gpu_starvation, gpu_low_utilization: the
-- default rules of `nsys analyze`) share -- their settings, the time window they look at, and the
-- GPU work, copies, sets and API calls inside it.
-- include:
--
-- From: runs, spans, memops, launches, and DuckDB variables. The rule options, as `nsys analyze -r
-- RULE:NAME=VALUE` takes them (`xsp-trace analyze --set NAME=VALUE` sets them; the defaults below
-- are nsys's, xsp_trace/formats/nsys_rules.py):
--     SET VARIABLE xsp_rule_rows = 50;            -- at most this many rows per rule and run
--     SET VARIABLE xsp_rule_start_ns = 0;         -- only work ending at or after this time (ns after
--                                                 -- the run's origin, runs.origin_ns)
--     SET VARIABLE xsp_rule_end_ns = 2e9;         -- only work starting before this time (same base)
--     SET VARIABLE xsp_rule_nvtx = 'step@mydomain';  -- the window of the first range of that name
--     SET VARIABLE xsp_rule_gap_ms = 500;         -- gpu_starvation: idle gaps longer than this
--     SET VARIABLE xsp_rule_threshold_pct = 50;   -- gpu_low_utilization: chunks below this use
--     SET VARIABLE xsp_rule_chunks = 30;          -- gpu_low_utilization: chunks per process and GPU
-- The API-name patterns and memory kinds come as variables from xsp_trace/formats/nsys_rules.py.

-- The settings with their defaults, read when a rule runs (a view, so SET VARIABLE takes effect).
CREATE OR REPLACE TEMP VIEW xsp_rules_settings AS
SELECT
    -- At most this many rows per rule and run (xsp_rule_rows).
    CAST(coalesce(getvariable('xsp_rule_rows'), 50) AS BIGINT) AS row_limit,
    -- gpu_starvation: idle gaps longer than this, ns (xsp_rule_gap_ms).
    CAST(coalesce(getvariable('xsp_rule_gap_ms'), 500) AS BIGINT) * 1000000 AS gap_ns,
    -- gpu_low_utilization: chunks used below this, % (xsp_rule_threshold_pct).
    CAST(coalesce(getvariable('xsp_rule_threshold_pct'), 50) AS DOUBLE) AS threshold_pct,
    -- gpu_low_utilization: chunks per process and GPU (xsp_rule_chunks).
    CAST(coalesce(getvariable('xsp_rule_chunks'), 30) AS BIGINT) AS chunks;

-- The window of each run, as nsys's filter_time_range makes it: explicit start/end, else the
-- first range (by start) named by xsp_rule_nvtx -- its text, then "@domain" when it has one.
-- NVTX ranges are the spans with a range_style (nsys); Kineto traces have no NVTX, so their CPU
-- ranges (model, layer, annotation) are matched by name. A run without that range has no window.
-- pid: only that process's work; tid: only that thread's API calls, set (as nsys does) when the
-- range's thread is not the process's main thread.
CREATE OR REPLACE TEMP VIEW xsp_rules_window AS
WITH named AS (
    SELECT run_id, start_ns, end_ns, pid, tid, span_id,
           name || coalesce(getvariable('xsp_rule_nvtx_separator') || CASE WHEN range_style IS NOT NULL THEN category END, '') AS full_name
    FROM spans
    WHERE getvariable('xsp_rule_nvtx') IS NOT NULL
      AND (range_style IS NOT NULL OR (device_id IS NULL AND kind IN ('model', 'layer', 'annotation')))
), first_range AS (
    SELECT run_id, arg_min(struct_pack(start_ns, end_ns, pid, tid), (start_ns, span_id)) AS r
    FROM named
    WHERE full_name = getvariable('xsp_rule_nvtx')
    GROUP BY run_id
)
SELECT
    -- Run.
    runs.run_id,
    -- Work ending at or after this time counts, ns on the run clock (xsp_rule_start_ns is given
    -- after the run's origin, runs.origin_ns).
    coalesce(runs.origin_ns + getvariable('xsp_rule_start_ns'), f.r.start_ns, -9223372036854775808)::BIGINT AS start_ns,
    -- Work starting before this time counts, ns on the run clock.
    coalesce(runs.origin_ns + getvariable('xsp_rule_end_ns'), f.r.end_ns, 9223372036854775807)::BIGINT AS end_ns,
    -- Only this process's work (NULL: every process).
    f.r.pid AS pid,
    -- Only this thread's API calls (NULL: every thread).
    CASE WHEN f.r.tid <> f.r.pid THEN f.r.tid END AS tid
FROM runs
LEFT JOIN first_range AS f ON f.run_id = runs.run_id
WHERE getvariable('xsp_rule_nvtx') IS NULL OR f.run_id IS NOT NULL;

-- Whether a span [span_start, span_end) of process span_pid (thread span_tid, NULL for GPU work)
-- lies in a window: it ends at or after the window's start and starts before its end (nsys's
-- three-way test), in the window's process and thread where it names them.
CREATE OR REPLACE TEMP MACRO xsp_rules_in_window(span_start, span_end, span_pid, span_tid, win_start, win_end, win_pid, win_tid) AS (
    span_end >= win_start AND span_start < win_end
    AND (win_pid IS NULL OR span_pid = win_pid)
    AND (win_tid IS NULL OR span_tid IS NULL OR span_tid = win_tid)
);

-- The GPU work nsys's GPU rules read, per process and GPU: kernels, copies and sets that start
-- after 0 and lie in the window.
CREATE OR REPLACE TEMP VIEW xsp_rules_gpu_ops AS
SELECT
    -- Run.
    s.run_id,
    -- The GPU span.
    s.span_id,
    -- kernel, memcpy or memset.
    s.kind,
    -- Start, ns on the run clock.
    s.start_ns,
    -- End, ns.
    s.end_ns,
    -- Process.
    s.pid,
    -- GPU.
    s.device_id,
    -- Stream.
    s.stream_id
FROM spans AS s
JOIN xsp_rules_window AS w ON w.run_id = s.run_id
WHERE s.kind IN ('kernel', 'memcpy', 'memset') AND s.start_ns > 0
  AND xsp_rules_in_window(s.start_ns, s.end_ns, s.pid, NULL, w.start_ns, w.end_ns, w.pid, w.tid);

-- Copies and sets in the window with the API call that launched them (wherever that call lies):
-- the rows the memcpy/memset rules choose from.
CREATE OR REPLACE TEMP VIEW xsp_rules_memops AS
SELECT
    -- Run.
    s.run_id,
    -- The GPU copy or set.
    s.span_id,
    -- memcpy or memset.
    m.kind,
    -- Start, ns on the run clock.
    s.start_ns,
    -- Duration, ns.
    s.end_ns - s.start_ns AS duration_ns,
    -- Copy direction (HtoD, DtoH, ...).
    m.copy_kind,
    -- Source memory kind (pageable, pinned, device, ...).
    m.src_kind,
    -- Destination memory kind.
    m.dst_kind,
    -- Bytes.
    m.bytes,
    -- Process.
    s.pid,
    -- GPU.
    s.device_id,
    -- Stream.
    s.stream_id,
    -- The API call that launched it.
    api.name AS api_name
FROM spans AS s
JOIN memops AS m ON m.run_id = s.run_id AND m.span_id = s.span_id
JOIN launches AS l ON l.run_id = s.run_id AND l.gpu_span_id = s.span_id
JOIN spans AS api ON api.run_id = l.run_id AND api.span_id = l.api_span_id
JOIN xsp_rules_window AS w ON w.run_id = s.run_id
WHERE xsp_rules_in_window(s.start_ns, s.end_ns, s.pid, NULL, w.start_ns, w.end_ns, w.pid, w.tid);

-- CUDA API calls in the window (of its thread, when the window names one).
CREATE OR REPLACE TEMP VIEW xsp_rules_api_calls AS
SELECT
    -- Run.
    s.run_id,
    -- The API call's span.
    s.span_id,
    -- Its name.
    s.name,
    -- Start, ns on the run clock.
    s.start_ns,
    -- End, ns.
    s.end_ns,
    -- Process.
    s.pid,
    -- Thread.
    s.tid
FROM spans AS s
JOIN xsp_rules_window AS w ON w.run_id = s.run_id
WHERE s.kind = 'api' AND xsp_rules_in_window(s.start_ns, s.end_ns, s.pid, s.tid, w.start_ns, w.end_ns, w.pid, w.tid);

-- The rows a memcpy/memset rule reports, per run the longest first, at most xsp_rule_rows (the
-- table xsp_rules_settings), with start_ns after the run's origin (runs.origin_ns). `rule`:
--   'cuda_async_memcpy': async copies with a pageable side (xsp_rule_async_memcpy_api, xsp_rule_pageable_kind);
--   'cuda_sync_memcpy':  synchronous copies (xsp_rule_sync_memcpy_api / _not_api), host-to-device
--                        copies of at most xsp_rule_small_htod_bytes left out, as nsys does;
--   'cuda_sync_memset':  synchronous sets (xsp_rule_sync_memset_api / _not_api) of the memory kinds
--                        xsp_rule_sync_memset_kinds.
-- The patterns are variables set from xsp_trace/formats/nsys_rules.py.
CREATE OR REPLACE TEMP MACRO xsp_rules_flagged_memops(rule) AS TABLE
SELECT m.run_id, m.span_id, m.duration_ns, m.start_ns - r.origin_ns AS start_ns, m.src_kind, m.dst_kind, m.bytes,
       m.bytes / 1e6 AS bytes_mb, m.pid, m.device_id, m.stream_id, m.api_name
FROM xsp_rules_memops AS m
JOIN runs AS r USING (run_id)
WHERE CASE rule
    WHEN 'cuda_async_memcpy' THEN m.kind = 'memcpy'
        AND m.api_name ILIKE getvariable('xsp_rule_async_memcpy_api')
        AND (m.src_kind = getvariable('xsp_rule_pageable_kind') OR m.dst_kind = getvariable('xsp_rule_pageable_kind'))
    WHEN 'cuda_sync_memcpy' THEN m.kind = 'memcpy'
        AND m.api_name ILIKE getvariable('xsp_rule_sync_memcpy_api')
        AND m.api_name NOT ILIKE getvariable('xsp_rule_sync_memcpy_not_api')
        AND NOT (m.bytes <= getvariable('xsp_rule_small_htod_bytes') AND m.copy_kind = getvariable('xsp_rule_small_copy_kind'))
    WHEN 'cuda_sync_memset' THEN m.kind = 'memset'
        AND m.api_name ILIKE getvariable('xsp_rule_sync_memset_api')
        AND m.api_name NOT ILIKE getvariable('xsp_rule_sync_memset_not_api')
        AND list_contains(getvariable('xsp_rule_sync_memset_kinds'), m.dst_kind)
    END
QUALIFY row_number() OVER (PARTITION BY m.run_id ORDER BY m.duration_ns DESC, m.start_ns, m.span_id) <= (SELECT row_limit FROM xsp_rules_settings);
