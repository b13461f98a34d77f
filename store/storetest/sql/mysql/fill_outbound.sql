-- Bulk-loads N pending outbound events over R records, in one statement.
-- Parameters in order: destination, id prefix, base time, R, N. Event n gets id
-- prefix || n, record prefix || ((n - 1) % R + 1) and CreatedDate base + n
-- microseconds. Uses MariaDB's SEQUENCE engine (seq_1_to_N tables).
INSERT INTO _System_IntegrationOutbound
    (Id, Destination, ObjectType, RecordID, EventType, Payload, Status, RetryCount,
     CreatedDate, LastModifiedDate, NextAttemptDate, Attempt, Seq, Lane)
SELECT CONCAT(p.prefix, LPAD(s.seq, 10, '0')), p.dest, 'contacts', CONCAT(p.prefix, (s.seq - 1) % p.recs + 1), 'update',
       '{"email":"bench@example.com","firstname":"Bench"}', 'pending', 0,
       TIMESTAMPADD(MICROSECOND, s.seq, p.base),
       TIMESTAMPADD(MICROSECOND, s.seq, p.base),
       TIMESTAMPADD(MICROSECOND, s.seq, p.base), 0,
       (s.seq - 1) DIV p.recs + 1, (s.seq - 1) DIV p.recs + 1
FROM seq_1_to_100000000 AS s
CROSS JOIN (SELECT ? AS dest, ? AS prefix, CAST(? AS DATETIME(6)) AS base, CAST(? AS UNSIGNED) AS recs) AS p
WHERE s.seq <= ?
