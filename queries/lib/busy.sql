-- lib/busy: every GPU's busy stretches -- the union of its kernels, copies and sets over all
-- streams -- and the run's GPU idle windows, which the idle-gap, utilisation, step and CPU-activity
-- analyses read.
-- include: lib/gpu_work
--
-- From: the GPU work (lib/gpu_work); launches and spans (the threads that launched it).

-- Every GPU's busy stretches: the union of its kernels, copies and sets over all streams.
CREATE OR REPLACE TEMP VIEW xsp_gpu_busy_intervals AS
WITH ordered AS (
    SELECT run_id, device_id, start_ns, end_ns,
           max(end_ns) OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns
                             ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
    FROM xsp_gpu_work
), islands AS (
    SELECT *, sum(CASE WHEN covered_until IS NULL OR start_ns > covered_until THEN 1 ELSE 0 END)
                  OVER (PARTITION BY run_id, device_id ORDER BY start_ns, end_ns ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT
    -- Run.
    run_id,
    -- GPU.
    device_id,
    -- Start of the busy stretch, ns on the run clock.
    min(start_ns) AS start_ns,
    -- Its end, ns.
    max(end_ns) AS end_ns
FROM islands GROUP BY run_id, device_id, island;


-- The run's GPU idle windows: stretches in which none of its GPUs was busy, between two busy
-- stretches, at least the variable xsp_min_gap_ns long (default 1000 ns) -- where the CPU's
-- samples, thread states and blocking calls say what held the GPU up.
CREATE OR REPLACE TEMP VIEW xsp_gpu_idle_windows AS
WITH idle AS (
    SELECT run_id, start_ns,
           max(end_ns) OVER (PARTITION BY run_id ORDER BY start_ns, end_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS idle_from
    FROM xsp_gpu_busy_intervals
)
SELECT
    -- Run.
    run_id,
    -- Start of the window: the end of the busy stretch before it, ns on the run clock.
    idle_from AS gap_start_ns,
    -- Its end: the start of the next busy stretch, ns.
    start_ns AS gap_end_ns
FROM idle
WHERE start_ns - idle_from >= coalesce(getvariable('xsp_min_gap_ns'), 1000);

-- How many GPU operations each thread launched: which threads the CPU-activity analyses name as
-- launch threads.
CREATE OR REPLACE TEMP VIEW xsp_thread_launches AS
SELECT
    -- Run.
    a.run_id,
    -- Process of the launching thread.
    a.pid,
    -- The launching thread.
    a.tid,
    -- Launch calls it made.
    count(*) AS launches
FROM launches AS l
JOIN spans AS a ON a.run_id = l.run_id AND a.span_id = l.api_span_id
GROUP BY ALL;
