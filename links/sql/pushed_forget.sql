-- Forgets the pushed state of one record: a privacy deletion keeps none of
-- its values. Parameters: destination, object type, record id.
DELETE FROM hubsync_pushed
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
