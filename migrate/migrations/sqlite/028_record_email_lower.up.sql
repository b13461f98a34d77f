-- Emails match whatever their case: HubSpot keeps a contact's email in lower
-- case, so a local "Ada@Example.com" is the HubSpot contact
-- "ada@example.com" (records record_find_unlinked_email and
-- record_find_email_holder, drift record_by_email). The index of migration
-- 026 becomes one of the lower-cased email, under the same name. SQLite's
-- lower() folds ASCII letters only; the others match as written.
DROP INDEX idx_hubsync_record_email;
CREATE INDEX idx_hubsync_record_email ON hubsync_record (ObjectType, lower(json_extract(Fields, '$."email"')), Id);
