-- Adds each record's count of events in a batch to its sequence counter (see
-- the shared NextSeqBatch.sql), in ord order; MySQL has no INSERT … RETURNING,
-- so NextSeqBatchGet reads the new values back.
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
SELECT @queue, r.record_key, r.object_type, r.record_id, r.n
FROM JSON_TABLE(@records, '$[*]' COLUMNS (ord INT PATH '$.ord',
    record_key VARCHAR(50) CHARACTER SET utf8mb4 PATH '$.record_key',
    object_type VARCHAR(100) CHARACTER SET utf8mb4 PATH '$.object_type',
    record_id VARCHAR(255) CHARACTER SET utf8mb4 PATH '$.record_id',
    n BIGINT PATH '$.n')) AS r
ORDER BY r.ord
ON DUPLICATE KEY UPDATE Seq = hubsync_record_seq.Seq + VALUES(Seq)
