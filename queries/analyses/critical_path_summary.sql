-- analyses/critical_path_summary: what the critical path of each step is made of -- its time by
-- kind of segment, the spans with the most time on it, the streams that waited for other streams
-- on it -- and whether the path adds up to the step's latency.
--
-- From: xsp_critical_path (xsp_trace/analyze/critical_path/walk.py), steps, spans (the two streams of a
-- stream wait).
--
-- title: Critical path of each step: what sets the step time
-- group: gpu
-- builds: xsp_critical_path
-- include:
-- columns: run_id INTEGER, iteration INTEGER, latency_ns BIGINT, path_ns HUGEINT, waited_for_runs VARCHAR,
--     share_by_kind_pct VARCHAR, top_on_path VARCHAR, stream_waits VARCHAR
WITH units AS (
    SELECT p.run_id, p.step_span_id, any_value(p.iteration) AS iteration, sum(p.on_path_ns) AS path_ns,
           coalesce(any_value(st.end_ns - st.start_ns), max(p.end_ns) - min(p.start_ns)) AS latency_ns,
           string_agg(DISTINCT p.on_run_id::VARCHAR, ',' ORDER BY p.on_run_id::VARCHAR) FILTER (WHERE p.on_run_id <> p.run_id) AS waited_for_runs
    FROM xsp_critical_path AS p
    LEFT JOIN steps AS st ON st.run_id = p.run_id AND st.step_span_id = p.step_span_id
    GROUP BY p.run_id, p.step_span_id
), by_kind AS (
    SELECT run_id, step_span_id, kind, sum(on_path_ns) AS ns FROM xsp_critical_path GROUP BY run_id, step_span_id, kind
), named AS (
    -- A stream wait is named by its two streams, every other segment by its span.
    SELECT p.run_id, p.step_span_id, p.kind, p.on_run_id, p.span_id, p.on_path_ns,
           CASE WHEN p.on_run_id <> p.run_id THEN 'run ' || p.on_run_id || ': ' ELSE '' END
           || CASE WHEN p.waiter_span_id IS NOT NULL THEN 'stream ' || waiting.stream_id || ' waited for stream ' || waited.stream_id ELSE p.name END AS name
    FROM xsp_critical_path AS p
    LEFT JOIN spans AS waiting ON waiting.run_id = p.on_run_id AND waiting.span_id = p.waiter_span_id
    LEFT JOIN spans AS waited ON waited.run_id = p.on_run_id AND waited.span_id = p.span_id AND p.waiter_span_id IS NOT NULL
), top_spans AS (
    SELECT run_id, step_span_id, kind, name, sum(on_path_ns) AS ns,
           row_number() OVER (PARTITION BY run_id, step_span_id ORDER BY sum(on_path_ns) DESC, name) AS rank
    FROM named WHERE span_id IS NOT NULL GROUP BY run_id, step_span_id, kind, name
)
SELECT
    -- The run.
    u.run_id,
    -- The step's iteration number (NULL: a run without steps).
    u.iteration,
    -- The step's latency (ns; shown in ms): from its start to its end.
    u.latency_ns,
    -- Length of its critical path (ns; shown in ms); equal to the latency by construction on one rank.
    u.path_ns,
    -- Other runs (ranks) the path passes through: the stragglers this step waited for.
    u.waited_for_runs,
    -- Share of the path by kind of segment, in % of the path, largest first ("kernel 61.2 %, cpu_op 20.1 %, ...").
    (SELECT string_agg(k.kind || ' ' || round(100.0 * k.ns / nullif(u.path_ns, 0), 1) || ' %', ', ' ORDER BY k.ns DESC)
     FROM by_kind AS k WHERE k.run_id = u.run_id AND k.step_span_id IS NOT DISTINCT FROM u.step_span_id) AS share_by_kind_pct,
    -- The five spans with the most time on the path, with their kind and share in % of the path; "run
    -- N: " names a span of another rank, "stream S waited for stream T" a stream wait.
    (SELECT string_agg(t.name || ' [' || t.kind || '] ' || round(100.0 * t.ns / nullif(u.path_ns, 0), 1) || ' %', '; ' ORDER BY t.rank)
     FROM top_spans AS t WHERE t.run_id = u.run_id AND t.step_span_id IS NOT DISTINCT FROM u.step_span_id AND t.rank <= 5) AS top_on_path,
    -- Every stream wait on the path ("stream S waited for stream T 12.3 ms"), longest first: a stream
    -- whose next work waited for another stream's through an event (NULL: none).
    (SELECT string_agg(t.name || ' ' || round(t.ns / 1e6, 3) || ' ms', '; ' ORDER BY t.ns DESC, t.name)
     FROM top_spans AS t WHERE t.run_id = u.run_id AND t.step_span_id IS NOT DISTINCT FROM u.step_span_id AND t.kind = 'stream_wait') AS stream_waits
FROM units AS u
ORDER BY u.run_id, u.iteration NULLS FIRST
