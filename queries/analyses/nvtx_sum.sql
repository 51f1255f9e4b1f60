-- analyses/nvtx_sum: time spent in each NVTX range per run -- what `nsys stats --report nvtx_sum`
-- (nsys 2022.4: nvtxsum) prints, to the nanosecond: push/pop and start/end ranges grouped by
-- "domain:text" and style.
--
-- From: spans with a range_style (push_pop / start_end: the NVTX ranges of an nsys export); a
-- range never closed ends at the trace's last NVTX timestamp, as in nsys. Statistics as nsys
-- computes them (xsp_trace/formats/nsys_stats.py): median of an even count = mean of the two
-- middle values, sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: NVTX range summary (nsys stats nvtx_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, instances BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, style VARCHAR, range_name VARCHAR
WITH ranges AS (
    SELECT run_id,
           CASE WHEN category IS NULL THEN name ELSE category || ':' || name END AS range_name,
           range_style,
           end_ns - start_ns AS duration_ns
    FROM spans
    WHERE range_style IS NOT NULL
), summary AS MATERIALIZED (
    SELECT run_id, range_name, range_style, sum(duration_ns) AS total_ns, count(*) AS instances,
           avg(duration_ns) AS avg_ns, median(duration_ns) AS med_ns, min(duration_ns) AS min_ns,
           max(duration_ns) AS max_ns, coalesce(stddev_samp(duration_ns), 0) AS stddev_ns
    FROM ranges GROUP BY run_id, range_name, range_style
)
SELECT
    -- Run of the ranges.
    run_id,
    -- Share of the run's summed NVTX range time, percent (nested ranges each count).
    xsp_nsys_pct(total_ns, sum(total_ns) OVER (PARTITION BY run_id)) AS time_pct,
    -- Summed duration of every instance, ns.
    total_ns,
    -- Number of instances.
    instances,
    -- Mean duration per instance, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    xsp_nsys_round(avg_ns) AS avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    xsp_nsys_round(med_ns) AS med_ns,
    -- Shortest instance, ns.
    min_ns,
    -- Longest instance, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single instance).
    xsp_nsys_round(stddev_ns) AS stddev_ns,
    -- PushPop (nvtxRangePush/Pop) or StartEnd (nvtxRangeStart/End).
    CASE range_style WHEN 'push_pop' THEN 'PushPop' WHEN 'start_end' THEN 'StartEnd' ELSE 'Unknown' END AS style,
    -- "domain:text", or the text alone in the default domain.
    range_name
FROM summary
ORDER BY run_id, total_ns DESC, range_name;
