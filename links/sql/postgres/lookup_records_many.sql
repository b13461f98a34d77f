-- The owners of many external ids in one query; the third argument is a JSON
-- array of external ids.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ?
  AND ExternalID = ANY(ARRAY(SELECT jsonb_array_elements_text(CAST(? AS jsonb))))
