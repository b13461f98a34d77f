DELETE FROM {{.Table}} WHERE Id IN (
    SELECT Id FROM {{.Table}} WHERE Status = 'processed' AND ProcessedDate < @cutoff LIMIT @batch)
