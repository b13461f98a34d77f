-- A reject already kept (the same reason and raw event) is skipped.
INSERT INTO hubsync_rejected_webhook (Id, Hash, Reason, Message, RawPayload, ReceivedDate)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (Hash) DO NOTHING
