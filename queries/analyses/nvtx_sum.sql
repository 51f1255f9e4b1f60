-- analyses/nvtx_sum: time spent in each NVTX range per run -- what `nsys stats --report nvtx_sum`
-- (nsys 2022.4: nvtxsum) prints, to the nanosecond: push/pop and start/end ranges grouped by
-- "domain:text" and style.
--
-- From: xsp_nsys_summary('nvtx_sum') (lib/nsys_stats) over spans with a range_style (push_pop / start_end: the NVTX ranges of an nsys export); a
-- range never closed ends at the trace's last NVTX timestamp, as in nsys. Statistics as nsys
-- computes them (xsp_trace/formats/nsys_stats.py): median of an even count = mean of the two
-- middle values, sample standard deviation, averages rounded to 0.1 ns as nsys rounds (xsp_nsys_round: .x5 up).
--
-- title: NVTX range summary (nsys stats nvtx_sum)
-- group: summary
-- include: lib/nsys_stats
-- columns: run_id INTEGER, time_pct DOUBLE, total_ns HUGEINT, instances BIGINT, avg_ns DOUBLE, med_ns DOUBLE,
--     min_ns BIGINT, max_ns BIGINT, stddev_ns DOUBLE, style VARCHAR, range_name VARCHAR
SELECT
    -- Run of the ranges.
    run_id,
    -- Share of the run's summed NVTX range time, percent (nested ranges each count).
    time_pct,
    -- Summed duration of every instance, ns.
    total_ns,
    -- Number of instances.
    count AS instances,
    -- Mean duration per instance, ns (rounded to 0.1 as nsys: xsp_nsys_round).
    avg_ns,
    -- Median duration, ns (an even count: mean of the two middle values).
    med_ns,
    -- Shortest instance, ns.
    min_ns,
    -- Longest instance, ns.
    max_ns,
    -- Sample standard deviation of the durations, ns (0 for a single instance).
    stddev_ns,
    -- PushPop (nvtxRangePush/Pop) or StartEnd (nvtxRangeStart/End).
    CASE style WHEN 'push_pop' THEN 'PushPop' WHEN 'start_end' THEN 'StartEnd' ELSE 'Unknown' END AS style,
    -- "domain:text", or the text alone in the default domain.
    name AS range_name
FROM xsp_nsys_summary('nvtx_sum')
ORDER BY run_id, total_ns DESC, range_name;
