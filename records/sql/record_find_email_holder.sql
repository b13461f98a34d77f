-- Another record of the object type whose email is the value or its lower
-- case (HubSpot keeps one contact per email, in lower case); parameters:
-- object type, value, lower-cased value, the writing record's id ("" for a
-- new one). It reads the email index of migration 026.
SELECT r.Id FROM hubsync_record r INDEXED BY idx_hubsync_record_email
WHERE r.ObjectType = ?
  AND json_extract(r.Fields, '$."email"') IN (?, ?)
  AND r.Id <> ?
LIMIT 1
