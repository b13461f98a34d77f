-- The subscription requests the cleanup may delete, by status and age: for
-- each of synced and superseded, ops.Cleanup reads the requests last changed
-- before the retention in (updated_at, id) order, a batch at a time after the
-- last one read (subscriptions request_cleanup_select). Without it every
-- batch read the whole table; with it a run reads the requests past the
-- retention once, those it deletes and the newest of each contact it keeps.
-- Id last: the order is the index's, so that no batch sorts.
CREATE INDEX subscription_requests_settled ON subscription_requests (sync_status, updated_at, id);
