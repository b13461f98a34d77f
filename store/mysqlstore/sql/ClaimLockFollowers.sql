-- The later unfinished events of the records of the heads in ids (already locked
-- by this transaction), each with its head and whether it is due; the engine
-- keeps, per head, the ones before the first that is not due. They are locked
-- (waiting, not skipping: a skipped row would hide a gap in the record's order)
-- and read as last committed, as locking reads are. No other claimer waits for
-- them: while a head is unfinished no follower of it is a head, so no other
-- claim selects one, and only this transaction holds the head.
--
-- The processing followers are locked before the pending ones: the two SELECTs
-- of the UNION run one after the other. The open index orders a record's
-- entries by Status, and read committed takes no gap locks: a worker whose
-- lease expired may release a follower (or put it in backoff) while this read
-- waits for a row, which moves the follower's entry from 'processing' to
-- 'pending'. Read pending first, the entry moved behind the scan, the follower
-- was missed and the events behind it leased out of order
-- (TestClaimZombieRace). Read processing first, a follower the scan passed is
-- locked and cannot move, and one that moves ahead of it is found among the
-- pending. Nothing moves a follower of a held head the other way: only a claim
-- that holds its head leases it.
(SELECT STRAIGHT_JOIN f.Id, f.Lane, h.Id AS Head, {{template "due"}} AS Due
FROM {{template "ids"}} JOIN {{.Table}} h ON h.Id = j.Id
JOIN {{.Table}} f FORCE INDEX ({{.OpenIndex}}) ON {{same . "f" "h"}} AND f.Status = 'processing'
    AND f.Lane > h.Lane
FOR UPDATE)
UNION ALL
(SELECT STRAIGHT_JOIN f.Id, f.Lane, h.Id, {{template "due"}}
FROM {{template "ids"}} JOIN {{.Table}} h ON h.Id = j.Id
JOIN {{.Table}} f FORCE INDEX ({{.OpenIndex}}) ON {{same . "f" "h"}} AND f.Status = 'pending'
    AND f.Lane > h.Lane
FOR UPDATE)
ORDER BY Head, Lane
