-- Push dispatch through QStash; see the SQLite migration of the same number.
ALTER TABLE _System_IntegrationOutbound
    ADD COLUMN PublishStatus     VARCHAR(20),
    ADD COLUMN PublishAttempts   INT NOT NULL DEFAULT 0,
    ADD COLUMN PublishGeneration INT NOT NULL DEFAULT 0,
    ADD COLUMN PublishNextDate   DATETIME(6),
    ADD COLUMN PublishedDate     DATETIME(6),
    ADD COLUMN QStashMessageID   VARCHAR(255),
    ADD COLUMN PublishError      TEXT,
    ADD COLUMN PublishedLane     BIGINT;
