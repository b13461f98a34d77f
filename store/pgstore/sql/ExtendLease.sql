-- A heartbeat: the lease of each event still processing under its claim's
-- Attempt runs to at least @until (never shortened). Finished events and those
-- claimed again are left alone; LeaseLost names the latter.
UPDATE {{.Table}} AS t
SET LeaseExpiresDate = CASE WHEN t.LeaseExpiresDate >= @until THEN t.LeaseExpiresDate ELSE @until END,
    LastModifiedDate = @now
FROM {{template "leases"}}
WHERE t.Id = l.id AND t.Attempt = l.attempt AND t.Status = 'processing'
