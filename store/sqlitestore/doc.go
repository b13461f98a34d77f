// Package sqlitestore is the SQLite backend of hubsync's store (modernc.org/sqlite,
// no cgo). Open the database with a DSN from store.ParseDatabaseURL, which turns
// on WAL, a busy timeout and immediate transactions.
//
// SQLite admits one writer at a time, so a claim is a single UPDATE … RETURNING
// statement whose candidates cannot be taken by anyone else while it runs.
package sqlitestore
