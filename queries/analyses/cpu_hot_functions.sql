-- analyses/cpu_hot_functions: the functions the CPU sampler caught running most often -- over the
-- whole run, in each step, and in each stretch of time no GPU of the run was busy (the hot code
-- behind a GPU idle gap, whether or not a recorded span covers it).
--
-- From: cpu_samples (nsys --sample=cpu: one row per sample, its innermost frame), steps (a sample
-- of the step's process inside its window), xsp_gpu_idle_windows (lib/busy: no GPU of the run
-- busy, between the first and last GPU work;
-- stretches shorter than the variable xsp_min_gap_ns, default 1000 ns, left out) and runs
-- (origin_ns: the gap times shown are relative to it).
-- Every sample is counted once per scope: the `run` rows of a run add up to its samples; a sample
-- lies in at most one step of its process (the latest that started before it) and one gap.
--
-- title: Hottest CPU functions (sampled): per run, per step, in GPU idle time
-- group: summary
-- include: lib/busy
-- columns: run_id INTEGER, scope VARCHAR, iteration INTEGER, gap_start_ms DOUBLE, gap_ms DOUBLE, function
--     VARCHAR, module VARCHAR, samples BIGINT, samples_pct DOUBLE
WITH in_step AS (
    SELECT s.run_id, s.sample_id, arg_max(st.iteration, st.start_ns) AS iteration
    FROM cpu_samples AS s
    JOIN steps AS st ON st.run_id = s.run_id AND st.pid = s.pid AND s.ts_ns >= st.start_ns AND s.ts_ns < st.end_ns
    GROUP BY ALL
), scoped AS (
    SELECT run_id, 'run' AS scope, NULL::INTEGER AS iteration, NULL::BIGINT AS gap_start_ns, NULL::BIGINT AS gap_end_ns, function, module
    FROM cpu_samples
    UNION ALL
    SELECT s.run_id, 'step', i.iteration, NULL, NULL, s.function, s.module
    FROM cpu_samples AS s
    JOIN in_step AS i ON i.run_id = s.run_id AND i.sample_id = s.sample_id
    UNION ALL
    SELECT s.run_id, 'gpu idle', NULL, g.gap_start_ns, g.gap_end_ns, s.function, s.module
    FROM cpu_samples AS s
    JOIN xsp_gpu_idle_windows AS g ON g.run_id = s.run_id AND s.ts_ns >= g.gap_start_ns AND s.ts_ns < g.gap_end_ns
), counted AS (
    SELECT run_id, scope, iteration, gap_start_ns, gap_end_ns, function, module, count(*) AS samples
    FROM scoped
    GROUP BY ALL
)
SELECT
    -- Run of the samples.
    c.run_id,
    -- run (every sample), step (the samples of one step) or gpu idle (those of one stretch with no GPU busy).
    c.scope,
    -- The step's iteration (scope step).
    c.iteration,
    -- Start of the GPU idle stretch, ms from the run's origin (scope gpu idle).
    round((c.gap_start_ns - r.origin_ns) / 1e6, 3) AS gap_start_ms,
    -- Length of the GPU idle stretch, ms (scope gpu idle).
    round((c.gap_end_ns - c.gap_start_ns) / 1e6, 3) AS gap_ms,
    -- The sampled function (innermost frame); NULL: samples without a call chain.
    c.function,
    -- Its binary or library.
    c.module,
    -- Samples that caught it running, in this scope.
    c.samples,
    -- Its share of the scope's samples, percent.
    round(100.0 * c.samples / sum(c.samples) OVER (PARTITION BY c.run_id, c.scope, c.iteration, c.gap_start_ns), 2) AS samples_pct
FROM counted AS c
JOIN runs AS r ON r.run_id = c.run_id
ORDER BY c.run_id, c.scope = 'gpu idle', c.scope = 'step', c.iteration, c.gap_start_ns, c.samples DESC, c.function, c.module;
