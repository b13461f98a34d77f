-- The counters NextSeqBatch just incremented; this transaction holds their row
-- locks.
SELECT s.RecordKey, s.ObjectType, s.RecordID, s.Seq
FROM JSON_TABLE(@records, '$[*]' COLUMNS (
    record_key VARCHAR(50) CHARACTER SET utf8mb4 PATH '$.record_key',
    object_type VARCHAR(100) CHARACTER SET utf8mb4 PATH '$.object_type',
    record_id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.record_id')) AS r
JOIN hubsync_record_seq s ON s.Queue = @queue AND s.RecordKey = r.record_key
    AND s.ObjectType = r.object_type AND s.RecordID = r.record_id
FOR UPDATE
