{{template "recordof" .}} FROM {{.Table}} WHERE Status = 'failed'{{if .Key}} AND {{.Key}} = @key{{end}} ORDER BY Lane, Id
