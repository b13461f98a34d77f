SELECT RetryCount FROM {{.Table}} WHERE Id = @id AND Attempt = @attempt AND Status = 'processing'
