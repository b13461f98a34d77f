// Package storetest is the conformance suite and the benchmarks every hubsync
// store backend must pass: sqlitestore, pgstore and mysqlstore call Exercise from
// their tests, so one set of rules holds on every database.
//
// The suite drives time with a Clock passed as store.Config.Now: lease expiry and
// backoff are tested by advancing that clock, never by sleeping. A backend that
// compares against the database's own clock (now(), CURRENT_TIMESTAMP) instead of
// Config.Now fails it, on purpose: replicas, tests and the backoff policy all
// depend on one injectable clock.
//
// Claims hand out a record's due events together (head and followers, see
// package store); the suite checks the order, the backoff and MaxPerRecord stops,
// and, with concurrent claimers, that every event goes out once and no two
// claimers ever hold live leases on one record.
//
// Each subtest gets its own store, and so its own database, from the newStore
// function the backend passes in; subtests run in parallel.
package storetest
