-- Deletes one dead letter of the outbound queue, only while it is still failed.
DELETE FROM _System_IntegrationOutbound WHERE Id = ? AND Status = 'failed'
