-- analyses/critical_path_summary: what the critical path of each step is made of -- its time by
-- kind of segment and the spans with the most time on it -- and whether the path adds up to the
-- step's latency.
--
-- From: xsp_critical_path (xsp_trace/analyze/critical_path.py), steps.
WITH units AS (
    SELECT run_id, step_span_id, any_value(iteration) AS iteration, sum(on_path_ns) AS path_ns,
           max(end_ns) - min(start_ns) AS latency_ns
    FROM xsp_critical_path GROUP BY run_id, step_span_id
), by_kind AS (
    SELECT run_id, step_span_id, kind, sum(on_path_ns) AS ns FROM xsp_critical_path GROUP BY run_id, step_span_id, kind
), top_spans AS (
    SELECT run_id, step_span_id, kind, name, sum(on_path_ns) AS ns,
           row_number() OVER (PARTITION BY run_id, step_span_id ORDER BY sum(on_path_ns) DESC, name) AS rank
    FROM xsp_critical_path WHERE span_id IS NOT NULL GROUP BY run_id, step_span_id, kind, name
)
SELECT
    -- The run.
    u.run_id,
    -- The step's iteration number (NULL: a run without steps).
    u.iteration,
    -- The step's latency (ns): from its start to its end.
    u.latency_ns,
    -- Length of its critical path (ns); equal to the latency by construction.
    u.path_ns,
    -- Share of the path (%) by kind of segment, largest first ("kernel 61.2, cpu_op 20.1, ...").
    (SELECT string_agg(k.kind || ' ' || round(100.0 * k.ns / nullif(u.path_ns, 0), 1), ', ' ORDER BY k.ns DESC)
     FROM by_kind AS k WHERE k.run_id = u.run_id AND k.step_span_id IS NOT DISTINCT FROM u.step_span_id) AS share_by_kind_pct,
    -- The five spans with the most time on the path, with their kind and share (%).
    (SELECT string_agg(t.name || ' [' || t.kind || '] ' || round(100.0 * t.ns / nullif(u.path_ns, 0), 1), '; ' ORDER BY t.rank)
     FROM top_spans AS t WHERE t.run_id = u.run_id AND t.step_span_id IS NOT DISTINCT FROM u.step_span_id AND t.rank <= 5) AS top_on_path
FROM units AS u
ORDER BY u.run_id, u.iteration NULLS FIRST
