-- Webhook events the receiver refused while it stored the rest of their
-- delivery (malformed, an occurredAt out of range or too far ahead), kept with
-- the reason for an operator (GET /admin/rejected) and deleted with the
-- inbound retention. Hash (sha256 of reason and raw event) keeps a delivery
-- that is retried from storing its rejects twice. RawPayload is the event as
-- sent, as text (it may not be valid JSON).
CREATE TABLE hubsync_rejected_webhook (
    Id           VARCHAR(64)  NOT NULL PRIMARY KEY,
    Hash         CHAR(64)     NOT NULL UNIQUE,
    Reason       VARCHAR(50)  NOT NULL,
    Message      TEXT         NOT NULL,
    RawPayload   TEXT         NOT NULL,
    ReceivedDate TIMESTAMPTZ  NOT NULL
);
CREATE INDEX hubsync_rejected_webhook_received ON hubsync_rejected_webhook (ReceivedDate);
