-- The three queues of the Integration Inbox/Outbox design. Identifiers are left
-- unquoted, so PostgreSQL folds them to lower case; unquoted SQL that spells them
-- as the design does (_System_IntegrationInbound.IdempotencyKey) works unchanged.

CREATE TABLE _System_IntegrationInbound (
    Id               VARCHAR(255) PRIMARY KEY,
    Source           VARCHAR(50)  NOT NULL,
    ExternalID       VARCHAR(255) NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    EventType        VARCHAR(20)  NOT NULL,
    Payload          JSONB        NOT NULL,
    RawPayload       JSON,
    IdempotencyKey   VARCHAR(255) NOT NULL,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    TIMESTAMPTZ,
    CreatedDate      TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LastModifiedDate TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- leasing (seed 002): when the event may be claimed again, who holds it until
    -- when, and the fencing value that every claim increments
    NextAttemptDate  TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate TIMESTAMPTZ,
    Attempt          INTEGER      NOT NULL DEFAULT 0
);
CREATE INDEX idx_inbound_poll ON _System_IntegrationInbound (Status, CreatedDate);
CREATE INDEX idx_inbound_source ON _System_IntegrationInbound (Source, ObjectType, CreatedDate);
CREATE UNIQUE INDEX idx_inbound_idempotency ON _System_IntegrationInbound (IdempotencyKey);
CREATE INDEX idx_inbound_external ON _System_IntegrationInbound (Source, ExternalID);
-- claims filter one source and status and take the oldest first
CREATE INDEX idx_inbound_claim ON _System_IntegrationInbound (Source, Status, CreatedDate, Id);

CREATE TABLE _System_IntegrationOutbound (
    Id               VARCHAR(255) PRIMARY KEY,
    Destination      VARCHAR(50)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    RecordID         VARCHAR(255) NOT NULL,
    EventType        VARCHAR(20)  NOT NULL,
    Payload          JSONB        NOT NULL,
    OldPayload       JSONB,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    TIMESTAMPTZ,
    CreatedDate      TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LastModifiedDate TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    NextAttemptDate  TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate TIMESTAMPTZ,
    Attempt          INTEGER      NOT NULL DEFAULT 0
);
CREATE INDEX idx_outbound_poll ON _System_IntegrationOutbound (Destination, Status, CreatedDate);
CREATE INDEX idx_outbound_record ON _System_IntegrationOutbound (ObjectType, RecordID);

CREATE TABLE _System_OutboxEvent (
    Id               VARCHAR(255) PRIMARY KEY,
    EventType        VARCHAR(50)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    RecordID         VARCHAR(255) NOT NULL,
    Payload          JSONB        NOT NULL,
    Metadata         JSONB,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INTEGER      NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    TIMESTAMPTZ,
    CreatedDate      TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LastModifiedDate TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    NextAttemptDate  TIMESTAMPTZ  NOT NULL DEFAULT CURRENT_TIMESTAMP,
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate TIMESTAMPTZ,
    Attempt          INTEGER      NOT NULL DEFAULT 0
);
CREATE INDEX idx_outboxevent_poll ON _System_OutboxEvent (Status, CreatedDate);
CREATE INDEX idx_outboxevent_record ON _System_OutboxEvent (ObjectType, RecordID);
