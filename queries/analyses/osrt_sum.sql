-- analyses/osrt_sum: time spent in each OS runtime library function per run (read, sem_wait,
-- pthread_create...) -- what `nsys stats --report osrt_sum` (nsys 2022.4: osrtsum) prints, to the
-- nanosecond.
--
-- From: spans of kind 'other' whose category is the OS-runtime one (nsys OSRT_API calls, recorded
-- with --trace=osrt; the category name is a variable set from xsp_trace/formats/nsys_export.py).
-- Statistics as nsys computes them (xsp_trace/formats/nsys_stats.py): median of an even count =
-- mean of the two middle values, sample standard deviation, averages rounded to 0.1 ns.
WITH calls AS (
    SELECT run_id, name, end_ns - start_ns AS duration_ns
    FROM spans WHERE kind = 'other' AND category = getvariable('xsp_osrt_category')
), summary AS (
    SELECT run_id, name, sum(duration_ns) AS total_ns, count(*) AS calls, avg(duration_ns) AS avg_ns,
           median(duration_ns) AS med_ns, min(duration_ns) AS min_ns, max(duration_ns) AS max_ns,
           coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM calls GROUP BY run_id, name
)
SELECT
    -- Run of the calls.
    run_id,
    -- Share of the run's summed OS runtime time, percent (of the functions listed, not of wall time).
    round(100.0 * total_ns / sum(total_ns) OVER (PARTITION BY run_id), 1) AS time_pct,
    -- Summed duration of every call of the function, ns.
    total_ns,
    -- Number of calls.
    calls,
    -- Mean duration per call, ns (rounded to 0.1 as nsys).
    round(avg_ns, 1) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    round(med_ns, 1) AS med_ns,
    -- Shortest call, ns.
    min_ns,
    -- Longest call, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single call).
    round(stddev_ns, 1) AS stddev_ns,
    -- Function name.
    name
FROM summary
ORDER BY run_id, total_ns DESC, name;
