-- Whether a record has a link to a destination (recordTx.LinkMade), read
-- after the record's row is locked. PostgreSQL reads each statement's
-- committed state; SQLite's write transactions hold the write lock from
-- BEGIN. Parameters: destination, object type, id.
SELECT 1 FROM hubsync_link WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
