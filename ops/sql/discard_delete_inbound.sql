-- Deletes one dead letter of the inbound queue, only while it is still failed.
DELETE FROM _System_IntegrationInbound WHERE Id = ? AND Status = 'failed'
