-- MySQL cannot delete from a table it selects from in a subquery.
DELETE FROM hubsync_rejected_webhook WHERE ReceivedDate < ? LIMIT ?
