-- The candidates a claim locked that are still the heads of their records,
-- read in a statement of their own. In READ COMMITTED a locking read sees
-- the newest committed version of the rows it locks, but the head check of
-- the same statement (a plain read) sees the statement's snapshot: an event
-- committed after the claim's scan started could pass as its record's head
-- while its record's earlier event, committed just before it, was invisible
-- to the check. A new statement takes a new snapshot, which holds every
-- earlier event of a locked candidate: a record's events commit in sequence
-- order (the per-record counter row is locked until commit).
SELECT e.Id, e.CreatedDate FROM {{.Table}} e
WHERE e.Id IN (SELECT j.Id FROM {{template "ids"}})
  AND {{template "unblocked" .}}
