-- perfetto/slice_args: the source details (span_args) of the exported spans, one row per arg,
-- beside the span's start time and ordered by it, so that each part of perfetto/slices.sql reads
-- only its own rows (the part's start range; zone maps skip the rest) and gathers them into one
-- list per span there. Flat rows, not lists: building every span's list at once does not spill
-- (a list aggregate holds all its groups), a part's lists are small.
--
-- From: perfetto_spans and perfetto_runs (queries/perfetto/select.sql), span_args.
-- Creates TEMP TABLE perfetto_span_args, read by perfetto/slices.sql.

CREATE OR REPLACE TEMP TABLE perfetto_span_args AS
SELECT
    -- Run of the span.
    s.run_id,
    -- Start of the span (run clock).
    s.start_ns,
    -- The span.
    a.span_id,
    -- Arg name.
    a.key,
    -- Arg value as text.
    a.value
FROM span_args AS a
JOIN perfetto_spans AS s ON s.run_id = a.run_id AND s.span_id = a.span_id
ORDER BY s.run_id, s.start_ns;
