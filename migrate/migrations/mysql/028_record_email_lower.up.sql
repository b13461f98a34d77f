-- Emails match whatever their case: HubSpot keeps a contact's email in lower
-- case, so a local "Ada@Example.com" is the HubSpot contact
-- "ada@example.com" (records record_find_unlinked_email and
-- record_find_email_holder, drift record_by_email). The generated column of
-- migration 026 becomes the lower-cased email, with its index under the
-- same name.
ALTER TABLE hubsync_record
    DROP INDEX idx_hubsync_record_email,
    DROP COLUMN MatchEmail;
ALTER TABLE hubsync_record
    ADD COLUMN MatchEmail VARCHAR(191) AS (LOWER(LEFT(JSON_UNQUOTE(JSON_EXTRACT(Fields, '$."email"')), 191))) VIRTUAL,
    ADD INDEX idx_hubsync_record_email (ObjectType, MatchEmail);
