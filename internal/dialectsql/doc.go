// Package dialectsql is hubsync's one SQL dialect layer: the per-dialect
// plumbing that every SQL-backed package (the queue engine internal/sqlq and its
// backends, links, records, budget, migrate, the test helpers and the demo)
// shares instead of re-implementing:
//
//   - loading embedded .sql files, where a query that is the same on every
//     dialect lives once (sql/NAME.sql) and a dialect that needs other SQL
//     overrides it (sql/<dialect>/NAME.sql, or a backend's own folder: Read
//     layers any number of folders);
//   - placeholder rebinding: ? placeholders (Rebind) and @name parameters (Bind)
//     become $1, $2, … on PostgreSQL and stay ? elsewhere;
//   - encoding timestamps and JSON the way each schema stores them (Time,
//     TimeDest, JSON, JSONDest);
//   - InTx, the begin/commit/rollback wrapper.
//
// Opening a database (URL form, driver, pool sizing) is not here: each backend
// package under store/ owns its own, and hubsync.Open dispatches on the scheme.
package dialectsql
