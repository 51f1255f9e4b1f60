-- analyses/critical_path: the critical path of each step -- the chain of CPU work, launches, queue
-- delays, GPU work and synchronisation waits that set the step's latency -- as consecutive segments.
-- The segments tile the step, so their on_path_ns add up to the step's latency. In a database of
-- several ranks, a collective that waited for a later rank continues the path on that rank (the
-- last to arrive is the rank whose collective kernel is shortest; collectives match by name and
-- order, iterations by number).
--
-- From: xsp_critical_path (built by xsp_trace/analyze/critical_path/walk.py from spans, launches,
-- xsp_gpu_work and xsp_cpu_calls (the CPU-time taxonomy); see that module for the dependency rules and their
-- assumptions), steps, spans (the two streams of a stream wait). A run without steps is one unit from its first to its last CPU span.
--
-- title: Critical path of each step, segment by segment
-- group: gpu
-- builds: xsp_critical_path
-- include:
-- columns: run_id INTEGER, iteration INTEGER, seq INTEGER, kind VARCHAR, on_run_id INTEGER, span_id BIGINT,
--     name VARCHAR, stream_wait VARCHAR, offset_ns HUGEINT, on_path_ns BIGINT
SELECT
    -- The run.
    p.run_id,
    -- The step's iteration number (NULL: a run without steps, analysed whole).
    p.iteration,
    -- Position of the segment on the path, from the step's start.
    p.seq,
    -- What the time is: cpu_op, launch, queue_delay (launch call to GPU start, charged to the call:
    -- cudaLaunchKernel, cudaGraphLaunch, ...), kernel, memcpy, memset, communication, sync_wait (a
    -- blocking call returning after the GPU work it waited for), cpu_idle (no span on the thread),
    -- gpu_idle (a stream idle before its next item, launched already and waiting for no recorded
    -- event), stream_wait (a stream's next item waiting for another stream's work through an event:
    -- charged to that work; column stream_wait), thread_wait (a span's own time waiting for another
    -- thread of the process, or that thread's wake-up).
    p.kind,
    -- The run (rank) the segment lies on: another rank's when the step waited for it in a collective.
    p.on_run_id,
    -- The span the time is charged to (NULL for idle time; for a stream_wait, the item waited for).
    p.span_id,
    -- Its name.
    p.name,
    -- For a stream_wait, "stream S waited for stream T" (S: the waiting item's stream, T: the
    -- stream of the item it waited for); NULL for every other kind.
    CASE WHEN p.waiter_span_id IS NOT NULL
         THEN 'stream ' || waiting.stream_id || ' waited for stream ' || waited.stream_id END AS stream_wait,
    -- Segment start, ns from the path's start (the step's start, or on another rank the time the
    -- path entered it: ranks keep their own clocks).
    coalesce(sum(p.on_path_ns) OVER (PARTITION BY p.run_id, p.step_span_id ORDER BY p.seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS offset_ns,
    -- Length of the segment (ns).
    p.on_path_ns
FROM xsp_critical_path AS p
LEFT JOIN spans AS waiting ON waiting.run_id = p.on_run_id AND waiting.span_id = p.waiter_span_id
LEFT JOIN spans AS waited ON waited.run_id = p.on_run_id AND waited.span_id = p.span_id AND p.waiter_span_id IS NOT NULL
ORDER BY p.run_id, p.iteration NULLS FIRST, p.seq
