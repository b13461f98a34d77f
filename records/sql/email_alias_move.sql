-- Hands the merged-away emails a record holds to the survivor it is merged
-- into (merges chain: Eve into Frank, then Frank into George); parameters:
-- the survivor's record id, object type, the merged record's id.
UPDATE hubsync_email_alias SET RecordID = ? WHERE ObjectType = ? AND RecordID = ?
