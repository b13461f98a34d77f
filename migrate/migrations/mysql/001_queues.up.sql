-- The three queues of the Integration Inbox/Outbox design, with the design's
-- table, column and index names. Timestamps are DATETIME(6) in UTC.

CREATE TABLE _System_IntegrationInbound (
    Id               VARCHAR(255) PRIMARY KEY,
    Source           VARCHAR(50)  NOT NULL,
    ExternalID       VARCHAR(255) NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    EventType        VARCHAR(20)  NOT NULL,
    Payload          JSON NOT NULL,
    RawPayload       JSON,
    IdempotencyKey   VARCHAR(255) NOT NULL,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INT          NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    DATETIME(6),
    CreatedDate      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LastModifiedDate DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    -- leasing (seed 002): when the event may be claimed again, who holds it until
    -- when, and the fencing value that every claim increments
    NextAttemptDate  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate DATETIME(6),
    Attempt          INT          NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
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
    Payload          JSON NOT NULL,
    OldPayload       JSON,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INT          NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    DATETIME(6),
    CreatedDate      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LastModifiedDate DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    NextAttemptDate  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate DATETIME(6),
    Attempt          INT          NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX idx_outbound_poll ON _System_IntegrationOutbound (Destination, Status, CreatedDate);
CREATE INDEX idx_outbound_record ON _System_IntegrationOutbound (ObjectType, RecordID);

CREATE TABLE _System_OutboxEvent (
    Id               VARCHAR(255) PRIMARY KEY,
    EventType        VARCHAR(50)  NOT NULL,
    ObjectType       VARCHAR(100) NOT NULL,
    RecordID         VARCHAR(255) NOT NULL,
    Payload          JSON NOT NULL,
    Metadata         JSON,
    Status           VARCHAR(20)  NOT NULL DEFAULT 'pending',
    RetryCount       INT          NOT NULL DEFAULT 0,
    ErrorMessage     TEXT,
    ProcessedDate    DATETIME(6),
    CreatedDate      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LastModifiedDate DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    NextAttemptDate  DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    LeaseOwner       VARCHAR(255),
    LeaseExpiresDate DATETIME(6),
    Attempt          INT          NOT NULL DEFAULT 0
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
CREATE INDEX idx_outboxevent_poll ON _System_OutboxEvent (Status, CreatedDate);
CREATE INDEX idx_outboxevent_record ON _System_OutboxEvent (ObjectType, RecordID);
