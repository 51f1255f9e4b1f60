-- analyses/diff_totals: what `xsp-trace diff` compares between two databases -- per kernel name, per
-- framework op name and per layer name, the time per step (summed over every run of the database,
-- divided by its number of steps; a database without steps counts as one step).
--
-- From: spans (kernel: GPU time; op and layer: inclusive CPU wall time), steps.
WITH step_count AS (
    SELECT greatest(count(*), 1) AS steps FROM steps
)
SELECT
    -- kernel, op or layer.
    kind AS level,
    -- Kernel / op / layer name.
    name,
    -- Instances in the database.
    count(*) AS instances,
    -- Summed duration, ns.
    sum(end_ns - start_ns) AS total_ns,
    -- Summed duration per step, ns.
    sum(end_ns - start_ns) / any_value(s.steps) AS per_step_ns
FROM spans, step_count AS s
WHERE kind IN ('kernel', 'op', 'layer')
GROUP BY kind, name
ORDER BY kind, total_ns DESC;
