UPDATE hubsync_link SET ExternalID = ?, LastModifiedDate = ?
WHERE Destination = ? AND ObjectType = ? AND RecordID = ?
