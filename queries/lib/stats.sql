-- lib/stats: statistics over iterations the analyses share -- the trimmed mean as the XSP
-- authors' code computes it, over a list of durations.
-- include:
--
-- From: nothing but its argument; the variable xsp_trim (default 0.2) sets the fraction per tail:
--     SET VARIABLE xsp_trim = 0.2;

-- Trimmed mean as the XSP authors' code computes it (rai-project/evaluation TrimmedMean, trim
-- 0.2): sort; n < 3: the mean; n = 3: the middle value; otherwise drop floor(n*frac) values from
-- the bottom and floor(n*frac) from the top but at least the largest one, and average the rest.
CREATE OR REPLACE TEMP MACRO xsp_trimmed_mean(l, frac := NULL) AS (
    CASE
        WHEN len(l) = 0 THEN NULL
        WHEN len(l) < 3 THEN list_avg(l)
        WHEN len(l) = 3 THEN CAST(list_sort(l)[2] AS DOUBLE)
        ELSE list_avg(list_slice(
            list_sort(l),
            CAST(floor(len(l) * coalesce(frac, getvariable('xsp_trim'), 0.2)) AS BIGINT) + 1,
            least(len(l) - 1, len(l) - CAST(floor(len(l) * coalesce(frac, getvariable('xsp_trim'), 0.2)) AS BIGINT))))
    END
);
