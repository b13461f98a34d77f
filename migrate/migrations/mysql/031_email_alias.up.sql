-- The emails of records merged away into a survivor that has its own local
-- record: HubSpot keeps them on the survivor (hs_additional_emails), so an
-- upsert by one of them would write over the survivor. A record may not
-- take such an email while its survivor lives (records.ErrEmailTaken).
-- Email is lower case, as HubSpot keeps emails.
CREATE TABLE hubsync_email_alias (
    ObjectType VARCHAR(100) NOT NULL,
    Email      VARCHAR(320) NOT NULL,
    RecordID   VARCHAR(255) NOT NULL,
    PRIMARY KEY (ObjectType, Email)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
