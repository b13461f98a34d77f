{{if eq .Dir "inbound"}}
-- a locking read sees the latest commit even inside a repeatable-read snapshot
SELECT Id FROM _System_IntegrationInbound WHERE IdempotencyKey = @idempotency_key LOCK IN SHARE MODE
{{end}}
