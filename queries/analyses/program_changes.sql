-- analyses/program_changes: the captured runs in which profiling changed the program itself --
-- attaching the capture's layer hooks made the model run other ops (nn.TransformerEncoderLayer
-- and nn.MultiheadAttention leave their fused fast paths when a submodule carries a hook), so the
-- run measures another program than the un-instrumented one, with the overhead its level added.
--
-- From: capture_runs (program_changed, program_change_note: written by xsp-trace capture, which
-- compares the ops of one forward with and without hooks), the prelude's xsp_runs (experiment of
-- each run) and xsp_level_overhead (model latency of the level against the level below it).
--
-- title: Runs whose program profiling changed (fast paths left)
-- group: model
-- include: lib/overhead
-- columns: experiment VARCHAR, run_id INTEGER, level VARCHAR, tool VARCHAR, change VARCHAR,
--     overhead_pct DOUBLE
SELECT
    -- Experiment: "<model> bs=<batch size>".
    r.experiment,
    -- The captured run whose program changed.
    c.run_id,
    -- Its level: ML or MLG (the levels that attach layer hooks).
    c.level,
    -- Who recorded it: nsys or torch.
    c.tool,
    -- What changed, in words: which fused path was left and which ops were lost or added.
    c.program_change_note AS change,
    -- Model latency added by profiling this level over the level below it, percent (NULL when
    -- the experiment has no run of the level below).
    round(o.overhead_pct, 2) AS overhead_pct
FROM capture_runs AS c
JOIN xsp_runs AS r USING (run_id)
LEFT JOIN xsp_level_overhead AS o ON o.experiment = r.experiment AND o.level = c.level
WHERE c.program_changed
ORDER BY r.experiment, c.run_id;
