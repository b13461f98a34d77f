UPDATE {{.Table}} AS t
SET Status = 'pending', NextAttemptDate = @next, LeaseOwner = NULL, LeaseExpiresDate = NULL, LastModifiedDate = @now
FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
      FROM json_each(@leases)) AS l
WHERE t.Id = l.lid AND t.Attempt = l.lattempt AND +t.Status = 'processing'
RETURNING Id
