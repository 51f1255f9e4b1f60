-- analyses/nccl_collectives: every NCCL/RCCL collective per run, collective and message size:
-- how often, how long, and the algorithm and bus bandwidth nccl-tests would report for it.
--
-- From: xsp_collective_messages (queries/lib/collectives.sql: each communication kernel's
-- collective, message size and rank count from its args or its launch's enclosing ranges).
-- Bandwidths use the kernel time; a kernel also waits for its slowest peer, so a rank that
-- arrives early shows a low bandwidth (see analysis_rank_skew).
--
-- title: NCCL collectives: count, size, time, algorithm and bus bandwidth
-- group: comm
-- include: lib/collectives
-- columns: run_id INTEGER, collective VARCHAR, message_bytes BIGINT, group_size INTEGER,
--     group_size_from VARCHAR, count BIGINT, total_ns HUGEINT, avg_ns DOUBLE, min_ns BIGINT, max_ns BIGINT,
--     algbw_gb_per_s DOUBLE, busbw_gb_per_s DOUBLE
SELECT
    -- Run.
    run_id,
    -- The collective as nccl-tests names it (all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, send_recv ...).
    collective,
    -- Message size in bytes (NULL where the trace gives no size or an unknown dtype).
    message_bytes,
    -- Ranks in the communicator: the process group's size where the trace records it, else the
    -- job's world size (NULL where the trace says neither).
    group_size,
    -- Where group_size comes from: 'process group' (the collective's "Group size") or 'world size'
    -- (distributedInfo.world_size: no process group recorded; assumes all ranks take part).
    group_size_from,
    -- Number of collectives (kernels) of this size.
    count(*) AS count,
    -- Summed kernel time, ns.
    sum(duration_ns) AS total_ns,
    -- Mean kernel time, ns.
    round(avg(duration_ns), 1) AS avg_ns,
    -- Shortest kernel, ns.
    min(duration_ns) AS min_ns,
    -- Longest kernel, ns.
    max(duration_ns) AS max_ns,
    -- Algorithm bandwidth = message bytes / mean kernel time, GB/s (1e9 bytes/s), as nccl-tests.
    round(message_bytes / avg(duration_ns), 3) AS algbw_gb_per_s,
    -- Bus bandwidth = algbw x nccl-tests' factor for the collective and rank count, GB/s
    -- (all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; others 1); NULL when
    -- the factor needs the rank count and the trace does not give it.
    round(message_bytes / avg(duration_ns)
          * any_value(busbw_factor), 3) AS busbw_gb_per_s
FROM xsp_collective_messages
GROUP BY run_id, collective, message_bytes, group_size, group_size_from
ORDER BY run_id, total_ns DESC, collective, message_bytes, group_size;
