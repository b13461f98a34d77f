// Package pgstore is the PostgreSQL backend of hubsync's store, over database/sql
// with the pgx driver (github.com/jackc/pgx/v5/stdlib).
//
// Open (or OpenDB) opens a postgres:// URL with the pgx driver and a bounded
// connection pool.
//
// A claim reads the record lanes of migration 018 (hubsync_lane_<queue>: one
// row per record with unfinished events, its head and the time it becomes
// due, kept by statement-level triggers in the transaction of every change to
// the queue), not the backlog: one statement takes up to Limit due lanes
// with FOR UPDATE SKIP LOCKED, those of records claimed before first
// (recovered work: a lease expired, or a head released with a delay, in
// retry backoff or requeued; oldest due date first), then the others in due
// order, each from its own partial index (migrations 023, 024), reads each one's events in Lane
// order by index, and an UPDATE … RETURNING leases them and moves their lanes
// itself (the lane trigger stands aside for it). That statement
// (sql/Claim.sql) is the body of a server-side function per queue
// (hubsync_claim_<queue>, migrations 019, 021 to 024) whose SET clauses hold
// the planner settings that keep that plan whatever the table statistics say,
// so its cost follows what it returns, not the backlog; a claim is one call of
// it in autocommit, one round trip.
// EnqueueBatch inserts a whole batch with one
// INSERT … SELECT from a JSON parameter, after taking each event's sequence.
// Applications that use pgx natively can enqueue inside their pgx.Tx with the
// …Pgx methods.
package pgstore
