-- The pushed states of many records in one query; the third argument is a JSON
-- array of record ids. ARRAY(...) is evaluated once, so the primary key is used.
SELECT RecordID, ExternalID, Version, Fields, Deleted, EventDate, Seq FROM hubsync_pushed
WHERE Destination = ? AND ObjectType = ?
  AND RecordID = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
