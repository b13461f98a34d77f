SELECT ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
