-- The three queues of the Integration Inbox/Outbox design, with the design's
-- table, column and index names. Timestamps are INTEGER unix microseconds (UTC),
-- so they sort and compare exactly; JSON columns are TEXT.

CREATE TABLE _System_IntegrationInbound (
    Id               TEXT         PRIMARY KEY,
    Source           TEXT         NOT NULL,
    ExternalID       TEXT         NOT NULL,
    ObjectType       TEXT         NOT NULL,
    EventType        TEXT         NOT NULL,
    Payload          TEXT         NOT NULL,
    RawPayload       TEXT,
    IdempotencyKey   TEXT         NOT NULL,
    Status           TEXT         NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    INTEGER,
    CreatedDate      INTEGER      NOT NULL,
    LastModifiedDate INTEGER      NOT NULL,
    -- leasing (seed 002): when the event may be claimed again, who holds it until
    -- when, and the fencing value that every claim increments
    NextAttemptDate  INTEGER      NOT NULL,
    LeaseOwner       TEXT,
    LeaseExpiresDate INTEGER,
    Attempt          INTEGER      NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX idx_inbound_poll ON _System_IntegrationInbound (Status, CreatedDate);
CREATE INDEX idx_inbound_source ON _System_IntegrationInbound (Source, ObjectType, CreatedDate);
CREATE UNIQUE INDEX idx_inbound_idempotency ON _System_IntegrationInbound (IdempotencyKey);
CREATE INDEX idx_inbound_external ON _System_IntegrationInbound (Source, ExternalID);
-- claims filter one source and status and take the oldest first
CREATE INDEX idx_inbound_claim ON _System_IntegrationInbound (Source, Status, CreatedDate, Id);

CREATE TABLE _System_IntegrationOutbound (
    Id               TEXT         PRIMARY KEY,
    Destination      TEXT         NOT NULL,
    ObjectType       TEXT         NOT NULL,
    RecordID         TEXT         NOT NULL,
    EventType        TEXT         NOT NULL,
    Payload          TEXT         NOT NULL,
    OldPayload       TEXT,
    Status           TEXT         NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    INTEGER,
    CreatedDate      INTEGER      NOT NULL,
    LastModifiedDate INTEGER      NOT NULL,
    NextAttemptDate  INTEGER      NOT NULL,
    LeaseOwner       TEXT,
    LeaseExpiresDate INTEGER,
    Attempt          INTEGER      NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX idx_outbound_poll ON _System_IntegrationOutbound (Destination, Status, CreatedDate);
CREATE INDEX idx_outbound_record ON _System_IntegrationOutbound (ObjectType, RecordID);

CREATE TABLE _System_OutboxEvent (
    Id               TEXT         PRIMARY KEY,
    EventType        TEXT         NOT NULL,
    ObjectType       TEXT         NOT NULL,
    RecordID         TEXT         NOT NULL,
    Payload          TEXT         NOT NULL,
    Metadata         TEXT,
    Status           TEXT         NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    INTEGER,
    CreatedDate      INTEGER      NOT NULL,
    LastModifiedDate INTEGER      NOT NULL,
    NextAttemptDate  INTEGER      NOT NULL,
    LeaseOwner       TEXT,
    LeaseExpiresDate INTEGER,
    Attempt          INTEGER      NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX idx_outboxevent_poll ON _System_OutboxEvent (Status, CreatedDate);
CREATE INDEX idx_outboxevent_record ON _System_OutboxEvent (ObjectType, RecordID);
