SELECT Id, Version, Fields, CreatedDate, LastModifiedDate FROM hubsync_record
WHERE ObjectType = ? AND Id > ?
ORDER BY Id
LIMIT ?
