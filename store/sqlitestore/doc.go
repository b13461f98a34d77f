// Package sqlitestore is the SQLite backend of hubsync's store (modernc.org/sqlite,
// no cgo). Open (or OpenDB) opens a sqlite:PATH URL with
// WAL, a busy timeout and immediate transactions (ParseURL) and a small pool.
//
// SQLite admits one writer at a time, so a claim is a single UPDATE … RETURNING
// statement (heads and their followers) whose candidates cannot be taken by
// anyone else while it runs. The store's own writes queue on an in-process mutex
// (sqlq.Dialect.SerializeWrites) rather than on busy_timeout's polling; other
// writers on the same database still rely on busy_timeout.
package sqlitestore
