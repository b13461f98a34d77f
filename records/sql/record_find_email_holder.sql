-- Another record of the object type whose email is the value, whatever its
-- case (HubSpot keeps one contact per email, in lower case); parameters:
-- object type, value, the writing record's id ("" for a new one). It reads
-- the email index (migrations 026 and 028).
SELECT r.Id FROM hubsync_record r INDEXED BY idx_hubsync_record_email
WHERE r.ObjectType = ?
  AND lower(json_extract(r.Fields, '$."email"')) = lower(?)
  AND r.Id <> ?
LIMIT 1
