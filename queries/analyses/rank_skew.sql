-- analyses/rank_skew: the ranks of a distributed job side by side, step by step -- when several
-- runs (one trace per rank) are in one database: each rank's step time, how far it is from the
-- fastest rank, and how long its GPUs spent in collectives (NCCL/RCCL kernels) during the step.
-- In a synchronous job every rank waits in its collectives for the slowest one, so the straggler
-- is the rank that spends the least time in collectives (it arrives last and waits for nobody);
-- the others' extra collective time is their wait for it.
--
-- From: steps (one per iteration and run), xsp_gpu_work (prelude: communication kernels) and
-- attribution (the step of each kernel, whichever thread launched it), runs.rank. Only iterations
-- that at least two runs share; steps are matched by iteration number (ProfilerStep#N), never by
-- time, as each rank has its own clock.
--
-- title: Ranks side by side: step time, skew, collective wait, straggler
-- group: comm
-- include: lib/gpu_work
-- columns: iteration INTEGER, ranks BIGINT, run_id INTEGER, rank INTEGER, step_ms DOUBLE,
--     behind_fastest_ms DOUBLE, iteration_skew_ms DOUBLE, collectives BIGINT, collective_ms DOUBLE,
--     collective_wait_ms DOUBLE, straggler BOOLEAN
WITH per_step AS (
    SELECT st.run_id, r.rank, st.iteration, st.end_ns - st.start_ns AS step_ns,
           coalesce(sum(w.end_ns - w.start_ns), 0) AS comm_ns, count(w.span_id) AS collectives
    FROM steps AS st
    JOIN runs AS r USING (run_id)
    LEFT JOIN attribution AS att ON att.run_id = st.run_id AND att.step_span_id = st.step_span_id
    LEFT JOIN xsp_gpu_work AS w ON w.run_id = att.run_id AND w.span_id = att.span_id AND w.work_class = 'communication'
    WHERE st.iteration IS NOT NULL
    GROUP BY st.run_id, r.rank, st.iteration, st.end_ns, st.start_ns
), shared AS (
    SELECT *, count(*) OVER (PARTITION BY iteration) AS ranks,
           min(step_ns) OVER (PARTITION BY iteration) AS fastest_step_ns,
           max(step_ns) OVER (PARTITION BY iteration) AS slowest_step_ns,
           min(comm_ns) OVER (PARTITION BY iteration) AS least_comm_ns,
           row_number() OVER (PARTITION BY iteration ORDER BY comm_ns, run_id) AS comm_order
    FROM per_step
)
SELECT
    -- Iteration (step number).
    iteration,
    -- How many runs (ranks) have this iteration.
    ranks,
    -- Run (one per rank trace).
    run_id,
    -- Its distributed rank (NULL where the trace does not say).
    rank,
    -- Wall time of this rank's step, ms.
    round(step_ns / 1e6, 6) AS step_ms,
    -- Its step time minus the fastest rank's, ms.
    round((step_ns - fastest_step_ns) / 1e6, 6) AS behind_fastest_ms,
    -- The spread of the iteration over ranks (slowest - fastest step), ms.
    round((slowest_step_ns - fastest_step_ns) / 1e6, 6) AS iteration_skew_ms,
    -- Number of collective (NCCL/RCCL) kernels attributed to the step.
    collectives,
    -- Their summed GPU time, ms.
    round(comm_ns / 1e6, 6) AS collective_ms,
    -- Collective time above the least of any rank in the iteration: time spent waiting for the straggler, ms.
    round((comm_ns - least_comm_ns) / 1e6, 6) AS collective_wait_ms,
    -- The rank with the least collective time: the one the others wait for (only with collectives).
    comm_order = 1 AND comm_ns > 0 AS straggler
FROM shared
WHERE ranks >= 2
ORDER BY iteration, run_id;
