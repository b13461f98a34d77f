// Package pgstore is the PostgreSQL backend of hubsync's store, over database/sql
// with the pgx driver (github.com/jackc/pgx/v5/stdlib).
//
// A claim is one statement: CTEs select the due events of one key in creation
// order with FOR UPDATE SKIP LOCKED, and an UPDATE … RETURNING leases them.
// Applications that use pgx natively can enqueue inside their pgx.Tx with the
// …Pgx methods.
package pgstore
