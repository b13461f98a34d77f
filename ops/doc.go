// Package ops holds the operator functions that `hubsync status`, `hubsync
// dlq`, `hubsync cleanup`, the admin API and dashboard of package server and the
// demo share: LoadMetrics (queue depths and oldest pending ages),
// ListDeadLetters, SearchDeadLetters, RetryDeadLetters and RetryMatching,
// DiscardDeadLetters (kept with a reason, ListDiscarded), RecordEvents (a
// record's latest events both ways), Cleanup with its retention defaults, and Reconcile (the
// read-only sweep for expired leases and overdue events).
//
// Each works on any store.Store and serves the three queues alike through
// store.Queue; a Direction picks the queue. Errors of requests that cannot be
// carried out as asked wrap ErrBadRequest, which the admin API answers with 400.
package ops
