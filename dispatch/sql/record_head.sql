-- The earliest unfinished event of a record before the given lane, with its
-- state. Args: destination, object type, record id, lane.
SELECT Id, Status, NextAttemptDate, LeaseExpiresDate FROM _System_IntegrationOutbound
WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing') AND Lane < ?
ORDER BY Lane LIMIT 1
