// Package sqlq is the one implementation of store.Store over database/sql that
// the SQLite, PostgreSQL and MySQL/MariaDB backends share.
//
// A backend describes its database with a Dialect: the text of its named queries
// (an embedded .sql file rendered once per queue with text/template), its
// placeholder style, how it stores timestamps, and how it claims (one UPDATE …
// RETURNING statement, or a short lock-recheck-update transaction where the
// database has no UPDATE … RETURNING).
//
// Queries name their parameters @like_this; the engine rewrites them to the
// dialect's placeholders when it loads the file, so the same Go code binds the
// arguments of every dialect. Lists of ids and of leases are bound as one JSON
// array parameter, which each dialect's SQL unpacks (json_each, jsonb_to_recordset,
// JSON_TABLE), so no query text is built at run time.
package sqlq
