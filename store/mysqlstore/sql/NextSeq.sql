-- Increments one record's sequence counter (see the shared NextSeq.sql); MySQL
-- has no INSERT … RETURNING, so NextSeqGet reads the value back.
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
VALUES (@queue, @record_key, @object_type, @record_id, 1)
ON DUPLICATE KEY UPDATE Seq = Seq + 1
