-- The links of many records as they are now, after a link write: the third
-- argument is a JSON array of record ids. Under READ COMMITTED a new
-- statement sees the other writers' commits the write waited for.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ?
  AND RecordID = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
