// Package sqlq is the one implementation of store.Store over database/sql that
// the SQLite, PostgreSQL and MySQL/MariaDB backends share.
//
// A backend describes its database with a Dialect: its name, its own sql/
// folder of queries, and how it claims (one UPDATE … RETURNING statement, or a
// short lock-recheck-update transaction where the database has no UPDATE …
// RETURNING). The queries every dialect shares live once in this package's
// sql/NAME.sql; a backend's sql/NAME.sql overrides one of them or adds a query
// of its own, and its sql/_templates.sql holds its template definitions. Each
// query is rendered once per queue with text/template. Files are read,
// placeholders bound and timestamps and JSON encoded by internal/dialectsql.
//
// Queries name their parameters @like_this; the engine rewrites them to the
// dialect's placeholders (dialectsql.Bind) when it loads the files, so the same
// Go code binds the arguments of every dialect. Lists of ids and of leases are bound as one JSON
// array parameter, which each dialect's SQL unpacks (json_each, jsonb_to_recordset,
// JSON_TABLE), so no query text is built at run time. PostgreSQL's batch insert
// of inbound events (InsertBatch) instead takes one array parameter per column
// (batchColumns), which pgx sends in binary, so payloads are not escaped into
// a document.
package sqlq
