// Package mysqlstore is the MySQL/MariaDB backend of hubsync's store
// (github.com/go-sql-driver/mysql; MySQL 8.0.4+ or MariaDB 10.6+ for SKIP LOCKED
// and JSON_TABLE).
//
// Open (or OpenDB) opens a mysql:// URL (ParseURL turns it into the driver's
// DSN, with parseTime and UTC) with a bounded connection pool.
//
// MySQL has no UPDATE … RETURNING, so a claim is one short read-committed
// transaction: lock the due record heads with FOR UPDATE SKIP LOCKED, lock their
// followers (ClaimLockFollowers, the processing ones before the pending, so a
// follower released meanwhile is not skipped), lease them all, read them back. Idempotent inbound enqueue uses INSERT IGNORE on the unique
// IdempotencyKey.
package mysqlstore
