-- The emails of records merged away into a survivor that has its own local
-- record: HubSpot keeps them on the survivor (hs_additional_emails), so an
-- upsert by one of them would write over the survivor. A record may not
-- take such an email while its survivor lives (records.ErrEmailTaken).
-- Email is lower case, as HubSpot keeps emails.
CREATE TABLE hubsync_email_alias (
    ObjectType TEXT NOT NULL,
    Email      TEXT NOT NULL,
    RecordID   TEXT NOT NULL,
    PRIMARY KEY (ObjectType, Email)
);
