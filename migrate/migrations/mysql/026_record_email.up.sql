-- An index for matching a HubSpot contact to an unlinked local record by
-- email (the default mapping's id_field for contacts; records
-- record_find_unlinked_email): without it each HubSpot creation read every
-- record of its object type (92 ms per creation at 100,000 contacts on
-- MariaDB, growing with them; BENCHMARKS.md, eleventh session). Other
-- id_fields still scan. MySQL and MariaDB index JSON through a generated
-- column; it keeps the first 191 characters (an index key's limit), and the
-- query compares the whole value as well. InnoDB's secondary index ends with
-- the primary key, so it is in Id order within an email.
ALTER TABLE hubsync_record
    ADD COLUMN MatchEmail VARCHAR(191) AS (LEFT(JSON_UNQUOTE(JSON_EXTRACT(Fields, '$."email"')), 191)) VIRTUAL,
    ADD INDEX idx_hubsync_record_email (ObjectType, MatchEmail);
