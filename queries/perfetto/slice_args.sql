-- perfetto/slice_args: the source details (span_args) of the exported spans as one list per span,
-- beside the span's start time and ordered by it, so that each part of perfetto/slices.sql reads
-- only its own rows (the part's start range; zone maps skip the rest).
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
    -- Its source details as a list of {key, value}, by key.
    a.args
FROM (
    SELECT run_id, span_id, list(struct_pack(key := key, value := value) ORDER BY key) AS args
    FROM span_args
    WHERE run_id IN (SELECT run_id FROM perfetto_runs)
    GROUP BY run_id, span_id
) AS a
JOIN perfetto_spans AS s ON s.run_id = a.run_id AND s.span_id = a.span_id
ORDER BY s.run_id, s.start_ns;
