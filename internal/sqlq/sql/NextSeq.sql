-- Increments one record's sequence counter and returns the new value. The
-- upsert keeps the counter row locked until the enqueueing transaction ends, so
-- a concurrent enqueue of the same record waits and then reads the committed
-- value: a record's sequences follow the commit order of its transactions.
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
VALUES (@queue, @record_key, @object_type, @record_id, 1)
ON CONFLICT (Queue, RecordKey, ObjectType, RecordID) DO UPDATE SET Seq = hubsync_record_seq.Seq + 1
RETURNING Seq
