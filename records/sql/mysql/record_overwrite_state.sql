-- record_overwrite_state.sql as locking reads: under REPEATABLE READ a plain
-- read answers from the transaction's first snapshot, taken before the record
-- row was locked, and would miss a write queued (or a pushed state stored)
-- since. A locking clause applies to its own SELECT only, so the subquery
-- has one too.
SELECT
    EXISTS (
        SELECT 1 FROM _System_IntegrationOutbound
        WHERE Destination = ? AND ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')
        LOCK IN SHARE MODE
    ),
    p.ExternalID, p.Fields, p.Deleted, p.LastModifiedDate
FROM (SELECT 1 AS one) AS x
LEFT JOIN hubsync_pushed AS p ON p.Destination = ? AND p.ObjectType = ? AND p.RecordID = ?
LOCK IN SHARE MODE
