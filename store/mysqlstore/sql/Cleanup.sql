DELETE FROM {{.Table}} WHERE Status = 'processed' AND ProcessedDate < @cutoff LIMIT @batch
