-- Webhook events the receiver refused while it stored the rest of their
-- delivery (malformed, an occurredAt out of range or too far ahead), kept with
-- the reason for an operator (GET /admin/rejected) and deleted with the
-- inbound retention. Hash (sha256 of reason and raw event) keeps a delivery
-- that is retried from storing its rejects twice. ReceivedDate is DATETIME(6)
-- in UTC; RawPayload is the event as sent, as text (it may not be valid JSON).
CREATE TABLE hubsync_rejected_webhook (
    Id           VARCHAR(64)  NOT NULL PRIMARY KEY,
    Hash         CHAR(64)     NOT NULL,
    Reason       VARCHAR(50)  NOT NULL,
    Message      TEXT         NOT NULL,
    RawPayload   MEDIUMTEXT   NOT NULL,
    ReceivedDate DATETIME(6)  NOT NULL,
    UNIQUE KEY hubsync_rejected_webhook_hash (Hash),
    KEY hubsync_rejected_webhook_received (ReceivedDate)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;
