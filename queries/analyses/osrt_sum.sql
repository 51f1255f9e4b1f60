-- analyses/osrt_sum: time spent in each OS runtime library function per run (read, sem_wait,
-- pthread_create...) -- what `nsys stats --report osrt_sum` (nsys 2022.4: osrtsum) prints, to the
-- nanosecond.
--
-- From: spans of kind 'other' whose category is the OS-runtime one (nsys OSRT_API calls, recorded
-- with --trace=osrt; the category name is a variable set from xsp_trace/formats/nsys_export.py).
-- Statistics from the prelude's xsp_call_stats, as nsys computes them: median of an even count =
-- mean of the two middle values, sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: OS runtime summary (nsys stats osrt_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, calls BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, name VARCHAR
WITH summary AS MATERIALIZED (SELECT * FROM xsp_call_stats('other', getvariable('xsp_osrt_category')))
SELECT
    -- Run of the calls.
    run_id,
    -- Share of the run's summed OS runtime time, percent (of the functions listed, not of wall time).
    xsp_nsys_pct(total_ns, sum(total_ns) OVER (PARTITION BY run_id)) AS time_pct,
    -- Summed duration of every call of the function, ns.
    total_ns,
    -- Number of calls.
    calls,
    -- Mean duration per call, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    xsp_nsys_round(avg_ns) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    xsp_nsys_round(med_ns) AS med_ns,
    -- Shortest call, ns.
    min_ns,
    -- Longest call, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single call).
    xsp_nsys_round(stddev_ns) AS stddev_ns,
    -- Function name.
    name
FROM summary
ORDER BY run_id, total_ns DESC, name;
