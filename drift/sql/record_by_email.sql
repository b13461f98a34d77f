-- Any record of the object type whose email is the value, whatever its case
-- (HubSpot keeps emails in lower case), linked or not; parameters: type,
-- value. It reads the email index (migrations 026 and 028).
SELECT r.Id FROM hubsync_record r INDEXED BY idx_hubsync_record_email
WHERE r.ObjectType = ?
  AND lower(json_extract(r.Fields, '$."email"')) = lower(?)
LIMIT 1
