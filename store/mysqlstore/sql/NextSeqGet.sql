-- The counter NextSeq just incremented; this transaction holds its row lock.
SELECT Seq FROM hubsync_record_seq
WHERE Queue = @queue AND RecordKey = @record_key AND ObjectType = @object_type AND RecordID = @record_id
FOR UPDATE
