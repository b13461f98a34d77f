// Package sqlitestore is the SQLite backend of hubsync's store (modernc.org/sqlite,
// no cgo). Open the database with a DSN from store.ParseDatabaseURL, which turns
// on WAL, a busy timeout and immediate transactions.
//
// SQLite admits one writer at a time, so a claim is a single UPDATE … RETURNING
// statement (heads and their followers) whose candidates cannot be taken by
// anyone else while it runs. The store's own writes queue on an in-process mutex
// (sqlq.Dialect.SerializeWrites) rather than on busy_timeout's polling; other
// writers on the same database still rely on busy_timeout.
package sqlitestore
