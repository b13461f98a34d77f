-- The links of many records in one query; the third argument is a JSON array
-- of record ids.
SELECT RecordID, ExternalID FROM hubsync_link
WHERE Destination = ? AND ObjectType = ? AND RecordID IN (SELECT jsonb_array_elements_text(CAST(? AS jsonb)))
