-- Bulk-loads $1 pending outbound events for destination $2 over $5 records, with
-- ids $3 || n, record $3 || ((n - 1) % $5 + 1) and CreatedDate $4 + n
-- microseconds, in one statement.
INSERT INTO _System_IntegrationOutbound
    (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, RetryCount,
     CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
SELECT $3 || lpad(g::text, 10, '0'), $2, 'contacts', $3 || ((g - 1) % $5::int + 1)::text, 'update',
       '{"email":"bench@example.com","firstname":"Bench"}'::jsonb, 'pending', 0,
       $4::timestamptz + g * interval '1 microsecond',
       $4::timestamptz + g * interval '1 microsecond',
       $4::timestamptz + g * interval '1 microsecond', 0,
       (g - 1) / $5::int + 1, (g - 1) / $5::int + 1
FROM generate_series(1, $1::int) AS g
