-- The named leases whose event was claimed again (a newer Attempt).
SELECT t.Id FROM (SELECT json_extract(value, '$.id') AS lid, json_extract(value, '$.attempt') AS lattempt
                  FROM json_each(@leases)) AS l
JOIN {{.Table}} AS t ON t.Id = l.lid
WHERE t.Attempt <> l.lattempt
