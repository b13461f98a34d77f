-- Takes the sequences of a batch's events with one statement: adds each
-- record's count of events (n) to its counter and returns the counter's new
-- value, the last sequence of that record's events in the batch. @records is a
-- JSON array of objects (record_key, object_type, record_id, n), one per
-- record, ordered by ord: the counters are locked in that order, the same fixed
-- order for every batch, so concurrent batches do not deadlock. As in NextSeq,
-- the rows stay locked until the enqueueing transaction ends.
INSERT INTO hubsync_record_seq (Queue, RecordKey, ObjectType, RecordID, Seq)
{{template "seqrecords" .}}
ON CONFLICT (Queue, RecordKey, ObjectType, RecordID) DO UPDATE SET Seq = hubsync_record_seq.Seq + excluded.Seq
RETURNING RecordKey, ObjectType, RecordID, Seq
