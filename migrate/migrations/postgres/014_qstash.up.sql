-- Push dispatch through QStash; see the SQLite migration of the same number.
ALTER TABLE _System_IntegrationOutbound
    ADD COLUMN PublishStatus     VARCHAR(20),
    ADD COLUMN PublishAttempts   INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN PublishGeneration INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN PublishNextDate   TIMESTAMPTZ,
    ADD COLUMN PublishedDate     TIMESTAMPTZ,
    ADD COLUMN QStashMessageID   VARCHAR(255),
    ADD COLUMN PublishError      TEXT,
    ADD COLUMN PublishedLane     BIGINT;
