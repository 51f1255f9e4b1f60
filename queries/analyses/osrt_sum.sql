-- analyses/osrt_sum: time spent in each OS runtime library function per run (read, sem_wait,
-- pthread_create...) -- what `nsys stats --report osrt_sum` (nsys 2022.4: osrtsum) prints, to the
-- nanosecond.
--
-- From: spans of kind 'other' whose category is the OS-runtime one (nsys OSRT_API calls, recorded
-- with --trace=osrt; the category name is a variable set from xsp_trace/formats/nsys_export.py).
-- Statistics from lib/nsys_stats's xsp_nsys_summary, as nsys computes them: median of an even count =
-- mean of the two middle values, sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: OS runtime summary (nsys stats osrt_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, calls BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, name VARCHAR
SELECT
    -- Run of the calls.
    run_id,
    -- Share of the run's summed OS runtime time, percent (of the functions listed, not of wall time).
    time_pct,
    -- Summed duration of every call of the function, ns.
    total_ns,
    -- Number of calls.
    count AS calls,
    -- Mean duration per call, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    med_ns,
    -- Shortest call, ns.
    min_ns,
    -- Longest call, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single call).
    stddev_ns,
    -- Function name.
    name
FROM xsp_nsys_summary('osrt_sum')
ORDER BY run_id, total_ns DESC, name;
