SELECT {{cols . "t"}} FROM {{.Table}} t JOIN (
    SELECT Id FROM (({{template "pending" .}}) UNION ALL ({{template "expired" .}})) u
    ORDER BY CreatedDate, Id LIMIT @limit
) c ON c.Id = t.Id
