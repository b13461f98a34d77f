DELETE FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND ExternalID = ?
