SELECT {{cols . ""}} FROM {{.Table}}
WHERE Status = 'failed'{{if .Key}} AND (@key = '' OR {{.Key}} = @key){{end}} AND Id > @after
ORDER BY Id LIMIT @limit
