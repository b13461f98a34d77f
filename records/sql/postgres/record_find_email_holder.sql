-- See ../record_find_email_holder.sql. The index holds the lower-cased
-- email's first 191 characters: it finds the candidates, and the whole value
-- decides.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = $1
  AND lower(left(r.Fields ->> 'email', 191)) = lower(left(CAST($2 AS TEXT), 191))
  AND lower(r.Fields ->> 'email') = lower(CAST($2 AS TEXT))
  AND r.Id <> $3
LIMIT 1
