-- Whether a record has a link to a destination (recordTx.LinkMade), read
-- after the record's row is locked. A locking read: under REPEATABLE READ a
-- plain read would see the transaction's first snapshot and miss a link
-- committed since. Parameters: destination, object type, id.
SELECT 1 FROM hubsync_link WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
LOCK IN SHARE MODE
