-- A heartbeat: the lease of each event still processing under its claim's
-- Attempt runs to at least @until (never shortened). Finished events and those
-- claimed again are left alone; LeaseLost names the latter.
UPDATE {{.Table}} t
JOIN JSON_TABLE(@leases, '$[*]' COLUMNS (Id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.id', Attempt INT PATH '$.attempt')) AS l
  ON t.Id = l.Id AND t.Attempt = l.Attempt
SET t.LeaseExpiresDate = CASE WHEN t.LeaseExpiresDate >= @until THEN t.LeaseExpiresDate ELSE @until END,
    t.LastModifiedDate = @now
WHERE t.Status = 'processing'
