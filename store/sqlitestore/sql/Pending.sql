WITH {{template "due" .}}
SELECT {{cols . ""}} FROM {{.Table}} WHERE Id IN (SELECT Id FROM cand)
