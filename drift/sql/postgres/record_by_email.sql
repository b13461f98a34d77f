-- See ../record_by_email.sql.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND lower(left(r.Fields ->> 'email', 191)) = lower(left(CAST($2 AS TEXT), 191))
  AND lower(r.Fields ->> 'email') = lower(CAST($2 AS TEXT))
LIMIT 1
