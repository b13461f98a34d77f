{{if eq .Dir "inbound"}}
-- The ids of the events holding the keys of @keys (a JSON array), as of the
-- latest commit: a locking read, as IDByIdempotencyKey.
SELECT IdempotencyKey, Id FROM _System_IntegrationInbound
WHERE IdempotencyKey IN (
    SELECT j.k FROM JSON_TABLE(@keys, '$[*]' COLUMNS (k VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin PATH '$')) AS j
)
LOCK IN SHARE MODE
{{end}}
