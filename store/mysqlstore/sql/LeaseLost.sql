-- The named leases whose event was claimed again (a newer Attempt).
SELECT t.Id FROM {{.Table}} t
JOIN JSON_TABLE(@leases, '$[*]' COLUMNS (Id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.id', Attempt INT PATH '$.attempt')) AS l
  ON t.Id = l.Id
WHERE t.Attempt <> l.Attempt
