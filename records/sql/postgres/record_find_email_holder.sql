-- See ../record_find_email_holder.sql. The index holds the email's first 191
-- characters: it finds the candidates, and the whole value decides.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND left(r.Fields ->> 'email', 191) IN (left(CAST(? AS TEXT), 191), left(CAST(? AS TEXT), 191))
  AND r.Fields ->> 'email' IN (CAST(? AS TEXT), CAST(? AS TEXT))
  AND r.Id <> ?
LIMIT 1
