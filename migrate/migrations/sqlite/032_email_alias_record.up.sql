-- The merged-away emails a record holds, by record: a record's deletion
-- forgets them (records email_alias_forget) and a merge hands them to its
-- survivor (email_alias_move). Without it each such statement read every
-- alias of the object type, and on MySQL/MariaDB locked what it read, so
-- concurrent deletions waited for each other.
CREATE INDEX idx_hubsync_email_alias_record ON hubsync_email_alias (ObjectType, RecordID);
