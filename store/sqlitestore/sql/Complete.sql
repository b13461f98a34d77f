-- Batch lease changes look each lease up by primary key (the unary + keeps the
-- planner from walking every processing row instead).
UPDATE {{.Table}} AS t
SET Status = 'processed', ProcessedDate = @now, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
      FROM json_each(@leases)) AS l
WHERE t.Id = l.lid AND t.Attempt = l.lattempt AND +t.Status = 'processing'
RETURNING Id
