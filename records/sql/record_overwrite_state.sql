-- What a source change needs to know of a record's writes to that source
-- (see recordTx.overwritten), in one round trip: whether one is queued or in
-- flight (an unfinished outbound event: one range of index
-- idx_outbound_open), and the last one the destination accepted (the
-- record's pushed state, by primary key; none when it has none).
SELECT
    EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound
        WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')
    ),
    p.ExternalID, p.Fields, p.Deleted, p.LastModifiedDate
FROM (SELECT 1 AS one) AS x
LEFT JOIN hubsync_pushed AS p ON p.Destination = ? AND p.ObjectType = ? AND p.RecordID = ?
