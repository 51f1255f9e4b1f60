-- analyses/step_causes: each step's latency by cause -- its critical path's segments grouped by why
-- the time was spent -- the one causal story every finding reads. The path tiles the step, so a
-- step's causes add up to its latency; a wait counts as a cause only for the part the GPU had
-- nothing to run (while the GPU ran the work waited for, the path runs through that work and the
-- time is the GPU's).
--
-- From: xsp_critical_path (xsp_trace/analyze/critical_path/walk.py), spans, span_ancestors, attribution
-- (training phase, step of GPU work), launches, steps. The data-loading pattern is the variable
-- xsp_data_loading_pattern (xsp_trace/naming.py DATA_LOADING_PATTERN), the stall threshold
-- xsp_queue_stall_ns (xsp_trace/analyze/settings.py QUEUE_STALL_NS).
--
-- Causes, from the segment's kind and, for CPU work, from the span and the ranges enclosing it:
--   data_loading     CPU work inside the data loader's ranges
--   cpu_before_gpu   other CPU work of the step before its first call that launched GPU work
--                    (preprocessing; of a run without steps: before the run's first launch)
--   optimizer        CPU work of the optimizer (attribution.phase)
--   cpu_ops          any other CPU work: framework ops, Python, annotations
--   thread_wait      a thread's hand-off to or from another thread of its process
--   launch           launch calls, and launch-bound queue delay (call to GPU start)
--   sync_wait        a blocking call after the GPU work it waited for had ended: the GPU idle
--   gpu_compute      kernels
--   gpu_copy         copies and sets on the GPU
--   communication    collective and point-to-point kernels
--   stream_wait      a stream stalled with work queued, waiting for another stream's work, or
--                    work that started longer after its launch than the variable xsp_queue_stall_ns
--                    (`--set stall=NS`) on a free stream: waiting on a dependency the trace does
--                    not record (graph-internal work of a cudaGraphLaunch); named by its launch
--   gpu_idle         a stream idle between its items with nothing else binding
--   cpu_idle         the step's thread in no recorded span
--   other_rank       time on another rank the step waited for in a collective
--
-- title: Step time by cause: the critical path grouped by why the time went
-- group: gpu
-- builds: xsp_critical_path
-- include:
-- columns: run_id INTEGER, iteration INTEGER, step_span_id BIGINT, latency_ns HUGEINT, cause VARCHAR,
--     on_path_ns HUGEINT, share_pct DOUBLE, segments BIGINT, top_spans VARCHAR, top_names VARCHAR[],
--     regions VARCHAR[]
WITH path AS (
    SELECT p.*, coalesce(st.end_ns - st.start_ns, sum(p.on_path_ns) OVER (PARTITION BY p.run_id, p.step_span_id)) AS latency_ns
    FROM xsp_critical_path AS p
    LEFT JOIN steps AS st ON st.run_id = p.run_id AND st.step_span_id = p.step_span_id
), gpu_runs AS (
    SELECT DISTINCT run_id FROM spans WHERE stream_id IS NOT NULL
), first_gpu AS (
    -- When each step first gave the GPU work: its first call that launched GPU work (the GPU may
    -- still run an earlier step's work then; what counts is when this step had work to give).
    SELECT a.run_id, a.step_span_id, min(c.start_ns) AS first_gpu_ns
    FROM launches AS l
    JOIN attribution AS a ON a.run_id = l.run_id AND a.span_id = l.gpu_span_id
    JOIN spans AS c ON c.run_id = l.run_id AND c.span_id = l.api_span_id
    GROUP BY a.run_id, a.step_span_id
), run_first_gpu AS (
    SELECT l.run_id, min(c.start_ns) AS first_gpu_ns
    FROM launches AS l JOIN spans AS c ON c.run_id = l.run_id AND c.span_id = l.api_span_id
    GROUP BY l.run_id
), cpu_segments AS (
    SELECT DISTINCT run_id, span_id FROM path
    WHERE kind IN ('cpu_op', 'thread_wait') AND span_id IS NOT NULL AND on_run_id = run_id
), lineage AS (
    -- Each CPU span on a path with itself (distance 0) and every span enclosing it on its thread.
    SELECT run_id, span_id, span_id AS ancestor_id, 0 AS distance FROM cpu_segments
    UNION ALL
    SELECT a.run_id, a.span_id, a.ancestor_id, a.distance
    FROM span_ancestors AS a JOIN cpu_segments AS c ON c.run_id = a.run_id AND c.span_id = a.span_id
), in_loader AS (
    -- CPU spans on a path that are, or lie inside, a data-loading range.
    SELECT DISTINCT up.run_id, up.span_id
    FROM lineage AS up JOIN spans AS s ON s.run_id = up.run_id AND s.span_id = up.ancestor_id
    WHERE regexp_matches(s.name, getvariable('xsp_data_loading_pattern'))
), caused AS (
    SELECT p.run_id, p.iteration, p.step_span_id, p.latency_ns, p.on_path_ns, p.name, p.kind,
        CASE WHEN p.on_run_id = p.run_id THEN p.span_id END AS span_id,
        CASE
            WHEN p.on_run_id <> p.run_id THEN 'other_rank'
            WHEN p.kind = 'cpu_op' AND l.span_id IS NOT NULL THEN 'data_loading'
            WHEN p.kind = 'cpu_op' AND g.run_id IS NOT NULL
                 AND p.end_ns <= coalesce(f.first_gpu_ns, CASE WHEN p.step_span_id IS NULL THEN rf.first_gpu_ns END, p.end_ns - 1)
                 THEN 'cpu_before_gpu'
            WHEN p.kind = 'cpu_op' AND ph.phase = 'optimizer' THEN 'optimizer'
            WHEN p.kind = 'cpu_op' THEN 'cpu_ops'
            WHEN p.kind = 'queue_delay' AND p.on_path_ns > getvariable('xsp_queue_stall_ns') THEN 'stream_wait'
            WHEN p.kind IN ('launch', 'queue_delay') THEN 'launch'
            WHEN p.kind = 'kernel' THEN 'gpu_compute'
            WHEN p.kind IN ('memcpy', 'memset') THEN 'gpu_copy'
            ELSE p.kind
        END AS cause
    FROM path AS p
    LEFT JOIN in_loader AS l ON l.run_id = p.run_id AND l.span_id = p.span_id AND p.on_run_id = p.run_id
    LEFT JOIN gpu_runs AS g ON g.run_id = p.run_id
    LEFT JOIN first_gpu AS f ON f.run_id = p.run_id AND f.step_span_id = p.step_span_id
    LEFT JOIN run_first_gpu AS rf ON rf.run_id = p.run_id
    LEFT JOIN attribution AS ph ON ph.run_id = p.run_id AND ph.span_id = p.span_id AND p.on_run_id = p.run_id
), frame AS (
    -- The step range and the ranges enclosing it: the window, not work in it.
    SELECT run_id, step_span_id, step_span_id AS span_id FROM steps
    UNION ALL
    SELECT st.run_id, st.step_span_id, a.ancestor_id FROM steps AS st
    JOIN span_ancestors AS a ON a.run_id = st.run_id AND a.span_id = st.step_span_id
), outer_of AS (
    -- For each CPU span on a path: the outermost span enclosing it (itself included) inside its
    -- step's window -- the region a rule removes to take the span's time out of the step.
    SELECT p.run_id, p.step_span_id, p.span_id, arg_max(s.name, up.distance) AS outer_name
    FROM (SELECT DISTINCT run_id, step_span_id, span_id FROM path) AS p
    JOIN lineage AS up ON up.run_id = p.run_id AND up.span_id = p.span_id
    JOIN spans AS s ON s.run_id = up.run_id AND s.span_id = up.ancestor_id
    WHERE NOT EXISTS (SELECT 1 FROM frame AS f
                      WHERE f.run_id = p.run_id AND f.step_span_id IS NOT DISTINCT FROM p.step_span_id AND f.span_id = up.ancestor_id)
    GROUP BY p.run_id, p.step_span_id, p.span_id
), by_region AS (
    SELECT c.run_id, c.step_span_id, c.cause, xsp_normalized_name(o.outer_name) AS name, sum(c.on_path_ns) AS ns
    FROM caused AS c
    JOIN outer_of AS o ON o.run_id = c.run_id AND o.step_span_id IS NOT DISTINCT FROM c.step_span_id AND o.span_id = c.span_id
    GROUP BY c.run_id, c.step_span_id, c.cause, 4
), by_name AS (
    -- Time per span name of each cause, ranked (ties by name, so the lists are the same every run).
    SELECT *, row_number() OVER (PARTITION BY run_id, step_span_id, cause ORDER BY ns DESC, name) AS rank
    FROM (SELECT run_id, step_span_id, cause,
                 CASE WHEN span_id IS NULL THEN '(no span)'
                      WHEN span_id = step_span_id THEN '(the step range''s own time)'
                      ELSE xsp_normalized_name(name) END AS name,
                 sum(on_path_ns) AS ns
          FROM caused GROUP BY run_id, step_span_id, cause, 4)
), by_cause AS (
    SELECT run_id, step_span_id, cause, any_value(iteration) AS iteration, any_value(latency_ns) AS latency_ns,
           sum(on_path_ns) AS on_path_ns, count(*) AS segments
    FROM caused GROUP BY run_id, step_span_id, cause
)
SELECT
    -- The run.
    c.run_id,
    -- The step's iteration number (NULL: a run without steps, analysed whole).
    c.iteration,
    -- The step's range (spans.span_id; NULL: a run without steps).
    c.step_span_id,
    -- The step's latency (ns).
    c.latency_ns,
    -- The cause (see the header for each one's meaning).
    c.cause,
    -- Time on the step's critical path with this cause (ns); a step's causes add up to its path.
    c.on_path_ns,
    -- Its share of the step's latency (%).
    round(100.0 * c.on_path_ns / nullif(c.latency_ns, 0), 2) AS share_pct,
    -- Segments of the path with this cause.
    c.segments,
    -- The three spans with the most time of this cause, names without per-instance details, with
    -- their time on the path in ms ("aten::copy_ 12.3 ms; ..."); "(no span)" for idle time, "(the
    -- step range's own time)" for time in the step range outside every recorded span in it.
    (SELECT string_agg(b.name || ' ' || round(b.ns / 1e6, 3) || ' ms', '; ' ORDER BY b.rank)
     FROM by_name AS b
     WHERE b.run_id = c.run_id AND b.step_span_id IS NOT DISTINCT FROM c.step_span_id AND b.cause = c.cause AND b.rank <= 3) AS top_spans,
    -- Names of those spans, most time first (up to ten), as a list.
    (SELECT list(b.name ORDER BY b.rank)
     FROM by_name AS b
     WHERE b.run_id = c.run_id AND b.step_span_id IS NOT DISTINCT FROM c.step_span_id AND b.cause = c.cause AND b.rank <= 10) AS top_names,
    -- CPU causes: the outermost spans in the step that hold this time (the regions a what-if rule
    -- `region:NAME=0` removes), most time first, as a list (NULL for GPU causes).
    (SELECT list(r.name ORDER BY r.ns DESC, r.name)
     FROM by_region AS r
     WHERE r.run_id = c.run_id AND r.step_span_id IS NOT DISTINCT FROM c.step_span_id AND r.cause = c.cause) AS regions
FROM by_cause AS c
ORDER BY c.run_id, c.iteration NULLS FIRST, c.on_path_ns DESC, c.cause
