SELECT {{cols . ""}} FROM {{.Table}} WHERE Id = @id
