-- Bulk-loads ?1 pending outbound events for destination ?2 over ?5 records, with
-- ids ?3 || n, record ?3 || ((n - 1) % ?5 + 1) and CreatedDate ?4 + n (unix
-- microseconds), in one statement.
WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?1)
INSERT INTO _System_IntegrationOutbound
    (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, RetryCount,
     CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
SELECT ?3 || printf('%010d', n), ?2, 'contacts', ?3 || ((n - 1) % ?5 + 1), 'update',
       '{"email":"bench@example.com","firstname":"Bench"}', 'pending', 0,
       ?4 + n, ?4 + n, ?4 + n, 0, (n - 1) / ?5 + 1, (n - 1) / ?5 + 1
FROM g
