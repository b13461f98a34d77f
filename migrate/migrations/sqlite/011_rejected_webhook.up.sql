-- Webhook events the receiver refused while it stored the rest of their
-- delivery (malformed, an occurredAt out of range or too far ahead), kept with
-- the reason for an operator (GET /admin/rejected) and deleted with the
-- inbound retention. Hash (sha256 of reason and raw event) keeps a delivery
-- that is retried from storing its rejects twice. ReceivedDate is INTEGER unix
-- microseconds (UTC); RawPayload is the event as sent.
CREATE TABLE hubsync_rejected_webhook (
    Id           TEXT    NOT NULL PRIMARY KEY,
    Hash         TEXT    NOT NULL UNIQUE,
    Reason       TEXT    NOT NULL,
    Message      TEXT    NOT NULL,
    RawPayload   TEXT    NOT NULL,
    ReceivedDate INTEGER NOT NULL
) STRICT;
CREATE INDEX hubsync_rejected_webhook_received ON hubsync_rejected_webhook (ReceivedDate);
