-- Deletes up to @batch processed events finished before @cutoff: the oldest
-- entries of idx_*_processed (migration 020), then the rows by their ctids.
-- With Id IN (…) the planner, on a table of a few tens of thousands of rows,
-- hashed the batch's ids and read the whole table to join them; a TID scan
-- reads only the batch's rows at any size. Processed events never change
-- again, so a row's ctid cannot move between the two reads.
DELETE FROM {{.Table}} WHERE ctid = ANY (ARRAY(
    SELECT ctid FROM {{.Table}} WHERE Status = 'processed' AND ProcessedDate < @cutoff LIMIT @batch))
