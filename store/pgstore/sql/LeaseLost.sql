-- The named leases whose event was claimed again (a newer Attempt).
SELECT t.Id FROM {{.Table}} AS t
JOIN {{template "leases"}} ON t.Id = l.id
WHERE t.Attempt <> l.attempt
