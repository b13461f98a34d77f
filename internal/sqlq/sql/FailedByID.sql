{{template "recordof" .}} FROM {{.Table}} WHERE Id = @id AND Status = 'failed'
