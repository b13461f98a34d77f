-- record_find_unlinked with the field "email", whose expression index
-- (migrations 026 and 028, idx_hubsync_record_email: the lower-cased email,
-- since HubSpot keeps emails in lower case) it names exactly, so that the
-- match reads the records with that email instead of every record of the
-- object type; parameters: object type, value, destination. SQLite would
-- rather walk the primary key in Id order for the ORDER BY; INDEXED BY makes
-- it read the email's index (and fails the query if it ever could not).
SELECT r.Id FROM hubsync_record r INDEXED BY idx_hubsync_record_email
WHERE r.ObjectType = ?
  AND lower(json_extract(r.Fields, '$."email"')) = lower(?)
  AND NOT EXISTS (
    SELECT 1 FROM hubsync_link l
    WHERE l.Destination = ? AND l.ObjectType = r.ObjectType AND l.RecordID = r.Id
  )
ORDER BY r.Id
LIMIT 1
