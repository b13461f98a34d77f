{{if eq .Dir "inbound"}}
SELECT Id FROM _System_IntegrationInbound WHERE IdempotencyKey = @idempotency_key
{{end}}
