-- Newest first; ids are UUIDv7, so they sort by time of receipt.
SELECT Id, Reason, Message, RawPayload, ReceivedDate FROM hubsync_rejected_webhook
WHERE (? = '' OR Id < ?)
ORDER BY Id DESC
LIMIT ?
