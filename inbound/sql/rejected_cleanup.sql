DELETE FROM hubsync_rejected_webhook WHERE Id IN (
    SELECT Id FROM hubsync_rejected_webhook WHERE ReceivedDate < ? LIMIT ?)
