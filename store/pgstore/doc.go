// Package pgstore is the PostgreSQL backend of hubsync's store, over database/sql
// with the pgx driver (github.com/jackc/pgx/v5/stdlib).
//
// Open (or OpenDB) opens a postgres:// URL with the pgx driver and a bounded
// connection pool.
//
// A claim is one statement: CTEs select the due record heads of one key
// (records in CreatedDate order, each record's events in the Lane order the
// database assigned) with FOR UPDATE SKIP LOCKED and each head's due followers, and an
// UPDATE … RETURNING leases them. EnqueueBatch inserts a whole batch with one
// INSERT … SELECT from a JSON parameter, after taking each event's sequence.
// Applications that use pgx natively can enqueue inside their pgx.Tx with the
// …Pgx methods.
package pgstore
