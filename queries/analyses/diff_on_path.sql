-- analyses/diff_on_path: what `xsp-trace diff` explains a step-time change by, level by level --
-- per step, the critical-path time charged to each kernel, op and range name (the segment's own
-- span; range: an annotation such as record_function or the DataLoader's) and to each layer (the innermost layer range around the segment's span, or the span itself).
--
-- From: xsp_critical_path (built by xsp_trace/analyze/critical_path/walk.py), spans, span_ancestors,
-- steps (the step ranges themselves are left out).
-- Needs the macro xsp_normalized_name (xsp_trace.naming).
--
-- include:
-- columns: run_id INTEGER, iteration INTEGER, level VARCHAR, name VARCHAR, on_path_ns HUGEINT
WITH segments AS (
    SELECT p.run_id, p.step_span_id, p.iteration, p.seq, p.on_run_id, p.span_id, p.on_path_ns
    FROM xsp_critical_path AS p
    WHERE p.span_id IS NOT NULL
), step_names AS (
    -- The step ranges (and their copies of the same name) are the unit, not what explains it.
    SELECT DISTINCT st.run_id, s.name FROM steps AS st JOIN spans AS s ON s.run_id = st.run_id AND s.span_id = st.step_span_id
), own AS (
    SELECT g.run_id, g.iteration, CASE WHEN s.kind = 'annotation' THEN 'range' ELSE s.kind END AS level, xsp_normalized_name(s.name) AS name, g.on_path_ns
    FROM segments AS g JOIN spans AS s ON s.run_id = g.on_run_id AND s.span_id = g.span_id
    WHERE s.kind IN ('kernel', 'op', 'layer', 'annotation')
      AND NOT EXISTS (SELECT 1 FROM step_names AS n WHERE n.run_id = s.run_id AND n.name = s.name)
), layers AS (
    SELECT g.run_id, g.iteration, 'layer' AS level, arg_min(xsp_normalized_name(l.name), a.distance) AS name, any_value(g.on_path_ns) AS on_path_ns
    FROM segments AS g
    JOIN span_ancestors AS a ON a.run_id = g.on_run_id AND a.span_id = g.span_id
    JOIN spans AS l ON l.run_id = a.run_id AND l.span_id = a.ancestor_id AND l.kind = 'layer'
    JOIN spans AS s ON s.run_id = g.on_run_id AND s.span_id = g.span_id AND s.kind <> 'layer'
    GROUP BY g.run_id, g.step_span_id, g.iteration, g.seq
)
SELECT
    -- The run.
    run_id,
    -- The step's iteration (NULL: a run without steps, taken whole).
    iteration,
    -- kernel, op, range (an annotation) or layer.
    level,
    -- Its name without per-instance details.
    name,
    -- Critical-path time charged to it in the step, ns.
    sum(on_path_ns) AS on_path_ns
FROM (SELECT * FROM own UNION ALL SELECT * FROM layers)
GROUP BY run_id, iteration, level, name
ORDER BY run_id, iteration, level, name;
