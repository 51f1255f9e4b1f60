-- analyses/diff_totals: what `xsp-trace diff` compares between two databases -- per kernel, framework
-- op and layer name (per-instance details such as ", op_id = N" removed: xsp_normalized_name,
-- xsp_trace/naming.py) and per step, the calls, their summed duration and summed squared duration
-- (mean and spread per call, and per step), and how many steps the database holds. Spans outside
-- every step (all of them in a database without steps) form the rows whose step is NULL.
--
-- From: spans (kernel: GPU time; op and layer: inclusive CPU wall time), attribution (the step of
-- each span, whatever thread ran it), steps. Needs the macro xsp_normalized_name
-- (xsp_trace.naming.install_normalize_macro).
--
-- include:
-- columns: level VARCHAR, name VARCHAR, step_span_id BIGINT, calls BIGINT, total_ns DOUBLE,
--     total_sq_ns2 DOUBLE, steps BIGINT
WITH step_count AS (
    SELECT count(*) AS steps FROM steps
), durations AS (
    SELECT s.kind, xsp_normalized_name(s.name) AS name, a.step_span_id, (s.end_ns - s.start_ns)::DOUBLE AS ns
    FROM spans AS s
    LEFT JOIN attribution AS a USING (run_id, span_id)
    WHERE s.kind IN ('kernel', 'op', 'layer')
)
SELECT
    -- kernel, op or layer.
    d.kind AS level,
    -- Kernel / op / layer name without per-instance details.
    d.name,
    -- The step the calls belong to (steps.step_span_id); NULL outside every step.
    d.step_span_id,
    -- Calls of the name in that step.
    count(*) AS calls,
    -- Their summed duration, ns.
    sum(d.ns) AS total_ns,
    -- Their summed squared duration, ns^2 (for the spread of the time per call).
    sum(d.ns * d.ns) AS total_sq_ns2,
    -- Steps in the database (0: none).
    any_value(c.steps) AS steps
FROM durations AS d, step_count AS c
GROUP BY d.kind, d.name, d.step_span_id
ORDER BY level, name, step_span_id;
