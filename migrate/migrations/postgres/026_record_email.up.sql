-- An index for matching a HubSpot contact to an unlinked local record by
-- email (the default mapping's id_field for contacts; records
-- record_find_unlinked_email): without it each HubSpot creation read every
-- record of its object type (19 ms per creation at 100,000 contacts, growing
-- with them; BENCHMARKS.md, eleventh session). Other id_fields still scan.
-- Id last: the match takes the lowest Id, in the index's order, so that the
-- planner has no reason to walk the primary key instead.
CREATE INDEX idx_hubsync_record_email ON hubsync_record (ObjectType, (Fields ->> 'email'), Id);
