-- See ../record_find_email_holder.sql. MatchEmail (migration 026) holds the
-- email's first 191 characters: it finds the candidates, and the whole value
-- decides.
SELECT r.Id FROM hubsync_record r
WHERE r.ObjectType = ?
  AND r.MatchEmail IN (LEFT(?, 191), LEFT(?, 191))
  AND JSON_UNQUOTE(JSON_EXTRACT(r.Fields, '$."email"')) IN (?, ?)
  AND r.Id <> ?
LIMIT 1
