-- analyses/what_if: the step time predicted under `analyze --what-if` rules (some work faster, or
-- gone), by replaying every step over the critical path's dependencies, and the top of the new
-- critical path. Without rules the prediction equals the measured latency.
--
-- From: xsp_what_if (built by xsp_trace/analyze/critical_path/what_if.py from the critical path's dependencies:
-- spans, launches, xsp_gpu_work, xsp_cpu_calls; the rules in the variable
-- xsp_what_if_rules).
--
-- title: Predicted step time under --what-if rules, and the new critical path
-- group: gpu
-- builds: xsp_what_if
-- include:
-- columns: run_id BIGINT, iteration BIGINT, rules VARCHAR, latency_ns BIGINT, predicted_ns BIGINT,
--     change_pct DOUBLE, new_top_on_path VARCHAR
SELECT
    -- The run.
    run_id,
    -- The step's iteration number (NULL: a run without steps, analysed whole).
    iteration,
    -- The rules applied (space-separated, as given).
    rules,
    -- The step's measured latency (ns; tables show it in ms).
    latency_ns,
    -- Its predicted latency under the rules (ns; tables show it in ms): never below the GPU work its
    -- busiest stream still has to run in the step.
    predicted_ns,
    -- Predicted change of the step time (%): negative is faster.
    round(100.0 * (predicted_ns - latency_ns) / nullif(latency_ns, 0), 2) AS change_pct,
    -- The five spans with the most time on the new critical path: name [kind] time on it (ms).
    new_top_on_path
FROM xsp_what_if
ORDER BY run_id, iteration NULLS FIRST
