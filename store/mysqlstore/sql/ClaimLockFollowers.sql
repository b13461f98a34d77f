-- The later unfinished events of the records of the heads in ids (already locked
-- by this transaction), each with its head and whether it is due; the engine
-- keeps, per head, the ones before the first that is not due. They are locked
-- (waiting, not skipping: a skipped row would hide a gap in the record's order)
-- and read as last committed, as locking reads are. No other claimer waits for
-- them: while a head is unfinished no follower of it is a head, so no other
-- claim selects one, and only this transaction holds the head.
SELECT STRAIGHT_JOIN f.Id, f.Lane, h.Id,
    CASE WHEN (f.Status = 'pending' AND f.NextAttemptDate <= @now)
           OR (f.Status = 'processing' AND f.LeaseExpiresDate < @now) THEN 1 ELSE 0 END
FROM {{template "ids"}} JOIN {{.Table}} h ON h.Id = j.Id
JOIN {{.Table}} f FORCE INDEX ({{.OpenIndex}}) ON {{same . "f" "h"}} AND f.Status IN ('pending', 'processing')
    AND f.Lane > h.Lane
ORDER BY h.Id, f.Lane
FOR UPDATE
