-- Deletes one dead letter of the internal queue, only while it is still failed.
DELETE FROM _System_OutboxEvent WHERE Id = ? AND Status = 'failed'
