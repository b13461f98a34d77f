-- A heartbeat: the lease of each event still processing under its claim's
-- Attempt runs to at least @until (never shortened). Finished events and those
-- claimed again are left alone; LeaseLost names the latter.
UPDATE {{.Table}} AS t
SET LeaseExpiresDate = CASE WHEN t.LeaseExpiresDate >= @until THEN t.LeaseExpiresDate ELSE @until END,
    LastModifiedDate = @now
FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
      FROM json_each(@leases)) AS l
WHERE t.Id = l.lid AND t.Attempt = l.lattempt AND +t.Status = 'processing'
