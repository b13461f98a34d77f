// Package migrate applies hubsync's embedded, versioned schema migrations. The
// hubsync CLI (`hubsync migrate`) and the library share it.
//
// Migrations are files migrations/<dialect>/NNN_name.up.sql. Applied versions are
// recorded in hubsync_migration. Applying twice is a no-op; a database that has a
// version this binary does not know is refused with ErrDatabaseNewer. Concurrent
// migrators (several replicas starting at once) serialise on a database lock.
package migrate

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

//go:embed migrations
var migrationsFS embed.FS

var (
	// ErrDatabaseNewer means the database has migrations this binary does not know:
	// it was migrated by a newer hubsync. Upgrade this binary.
	ErrDatabaseNewer = errors.New("migrate: database schema is newer than this hubsync binary; upgrade hubsync")
	// ErrNotMigrated means migrations are pending.
	ErrNotMigrated = errors.New("migrate: database schema is not up to date; run `hubsync migrate`")
)

// Migration is one embedded schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Status reports where a database stands.
type Status struct {
	Current int         // highest applied version, 0 for none
	Latest  int         // highest version this binary knows
	Pending []Migration // known and not applied
	Unknown []int       // applied but unknown to this binary
}

// LockTimeoutDefault is Migrator.LockTimeout's default.
const LockTimeoutDefault = 5 * time.Second

// lockRetryPause is how long a migration that gave up waiting for a lock
// lets the table's users work before it asks again.
const lockRetryPause = 2 * time.Second

// Migrator applies migrations of one dialect to one database.
type Migrator struct {
	db         *sql.DB
	dialect    store.Dialect
	migrations []Migration

	// LockTimeout bounds each wait of a migration's statement for a table
	// lock on PostgreSQL and MySQL/MariaDB (default LockTimeoutDefault). A
	// schema change waits for every open transaction on its table, and
	// every later statement on the table waits behind it: unbounded, one
	// long report or backup transaction would stall every replica for as
	// long as it runs. Bounded, the migration gives up, lets the replicas
	// work for a moment, and asks again, until it gets the lock or its
	// context ends.
	LockTimeout time.Duration
	// OnLockWait, if set, is told each time a migration gave up waiting for
	// a lock and will ask again (attempt counts from 1).
	OnLockWait func(mg Migration, attempt int, err error)
}

// New returns a Migrator for db.
func New(db *sql.DB, dialect store.Dialect) (*Migrator, error) {
	ms, err := Migrations(dialect)
	if err != nil {
		return nil, err
	}
	return &Migrator{db: db, dialect: dialect, migrations: ms}, nil
}

// Migrations lists the embedded migrations of a dialect in version order.
func Migrations(dialect store.Dialect) ([]Migration, error) {
	if !dialectsql.Known(dialect) {
		return nil, fmt.Errorf("migrate: unknown dialect %q", dialect)
	}
	files, err := dialectsql.Read(".up.sql", dialectsql.Layer{FS: migrationsFS, Dir: path.Join("migrations", string(dialect))})
	if err != nil {
		return nil, fmt.Errorf("migrate: %s migrations: %w", dialect, err)
	}
	var ms []Migration
	for name, text := range files {
		num, rest, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: bad migration file name %s.up.sql; want NNN_name.up.sql", name)
		}
		ms = append(ms, Migration{Version: v, Name: rest, SQL: text})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrate: two %s migrations have version %d", dialect, ms[i].Version)
		}
	}
	return ms, nil
}

// Status reads the applied versions without changing anything.
func (m *Migrator) Status(ctx context.Context) (Status, error) {
	applied, err := m.applied(ctx, m.db)
	if err != nil {
		return Status{}, err
	}
	return m.status(applied), nil
}

func (m *Migrator) status(applied []int) Status {
	st := Status{}
	if n := len(m.migrations); n > 0 {
		st.Latest = m.migrations[n-1].Version
	}
	for _, v := range applied {
		st.Current = max(st.Current, v)
		if !slices.ContainsFunc(m.migrations, func(mg Migration) bool { return mg.Version == v }) {
			st.Unknown = append(st.Unknown, v)
		}
	}
	for _, mg := range m.migrations {
		if !slices.Contains(applied, mg.Version) {
			st.Pending = append(st.Pending, mg)
		}
	}
	return st
}

// Check returns nil when the schema is exactly current, ErrNotMigrated when
// migrations are pending, and ErrDatabaseNewer when the database is ahead.
func (m *Migrator) Check(ctx context.Context) error {
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	// Pending first: a database newer than the binary that also lacks one
	// of its migrations (a gap) is not one this binary can run on.
	if len(st.Pending) > 0 {
		return fmt.Errorf("%w (%d pending, database at version %d of %d)", ErrNotMigrated, len(st.Pending), st.Current, st.Latest)
	}
	if len(st.Unknown) > 0 {
		return fmt.Errorf("%w (database has version %d, this binary knows up to %d)", ErrDatabaseNewer, st.Current, st.Latest)
	}
	return nil
}

// Up applies every pending migration and returns the versions it applied.
func (m *Migrator) Up(ctx context.Context) ([]int, error) {
	conn, err := m.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close()
	unlock, err := m.lock(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer unlock()

	if _, err := conn.ExecContext(ctx, createVersionTable[m.dialect]); err != nil {
		return nil, fmt.Errorf("migrate: create hubsync_migration: %w", err)
	}
	applied, err := m.applied(ctx, conn)
	if err != nil {
		return nil, err
	}
	st := m.status(applied)
	if len(st.Unknown) > 0 {
		return nil, fmt.Errorf("%w (database has version %d, this binary knows up to %d)", ErrDatabaseNewer, st.Current, st.Latest)
	}
	if len(st.Pending) == 0 {
		return nil, nil
	}
	reset, err := m.boundLockWaits(ctx, conn)
	if err != nil {
		return nil, err
	}
	defer reset()
	var done []int
	for _, mg := range st.Pending {
		applied, err := m.applyWaiting(ctx, conn, mg)
		if err != nil {
			return done, err
		}
		if applied {
			done = append(done, mg.Version)
		}
	}
	return done, nil
}

// boundLockWaits sets the session's lock timeout to LockTimeout and returns
// what sets it back (the connection goes back to the pool).
func (m *Migrator) boundLockWaits(ctx context.Context, conn *sql.Conn) (func(), error) {
	timeout := cmp.Or(m.LockTimeout, LockTimeoutDefault)
	var set, unset string
	switch m.dialect {
	case store.Postgres:
		set, unset = fmt.Sprintf("SET lock_timeout = '%dms'", timeout.Milliseconds()), "SET lock_timeout TO DEFAULT"
	case store.MySQL:
		set, unset = fmt.Sprintf("SET SESSION lock_wait_timeout = %d", max(1, int(timeout.Round(time.Second)/time.Second))), "SET SESSION lock_wait_timeout = DEFAULT"
	default:
		return func() {}, nil
	}
	if _, err := conn.ExecContext(ctx, set); err != nil {
		return nil, fmt.Errorf("migrate: bound lock waits (%s): %w", set, err)
	}
	return func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), unset) }, nil
}

// applyWaiting applies mg, asking again after lockRetryPause each time a
// statement gave up waiting for a lock.
func (m *Migrator) applyWaiting(ctx context.Context, conn *sql.Conn, mg Migration) (bool, error) {
	for attempt := 1; ; attempt++ {
		applied, err := m.apply(ctx, conn, mg)
		if err == nil || !isLockTimeout(err) {
			return applied, err
		}
		if m.OnLockWait != nil {
			m.OnLockWait(mg, attempt, err)
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("migrate: %03d_%s stopped while waiting for a table lock that an open transaction holds (%v): %w", mg.Version, mg.Name, err, ctx.Err())
		case <-time.After(lockRetryPause):
		}
	}
}

// isLockTimeout reports a statement that gave up waiting for a lock:
// MySQL/MariaDB's ER_LOCK_WAIT_TIMEOUT (metadata locks too), PostgreSQL's
// lock_not_available.
func isLockTimeout(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Error 1205") || strings.Contains(s, "SQLSTATE 55P03")
}

// lockedTable finds the table a schema change names ("" when it names none).
var lockedTable = regexp.MustCompile(`(?i)\b(?:ALTER\s+TABLE|ON|DROP\s+TABLE|TRUNCATE(?:\s+TABLE)?)\s+(?:IF\s+EXISTS\s+|ONLY\s+)?([A-Za-z_][A-Za-z0-9_]*)`)

// LockWaitTable returns the table a migration's statement that gave up
// waiting for a lock names, from its error ("" when it cannot tell).
func LockWaitTable(err error) string {
	_, stmt, ok := strings.Cut(err.Error(), "\nstatement: ")
	if !ok {
		return ""
	}
	var lines []string
	for _, l := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	if m := lockedTable.FindStringSubmatch(strings.Join(lines, " ")); m != nil {
		return m[1]
	}
	return ""
}

// LockWaitHint is a query that lists the sessions holding table (any table
// of the database when ""), for the operator of a migration that waits.
func LockWaitHint(d store.Dialect, table string) string {
	switch d {
	case store.Postgres:
		if table == "" {
			return "SELECT pid, xact_start, state, query FROM pg_stat_activity WHERE datname = current_database() AND xact_start IS NOT NULL AND pid <> pg_backend_pid() ORDER BY xact_start"
		}
		return fmt.Sprintf("SELECT a.pid, a.xact_start, a.state, a.query FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE l.relation = '%s'::regclass AND l.granted AND a.pid <> pg_backend_pid()", strings.ToLower(table))
	case store.MySQL:
		// LOCK TABLES (a default mysqldump) holds no InnoDB transaction:
		// the process list shows it, sleeping, with its age.
		return "SELECT ID, USER, HOST, COMMAND, TIME, STATE, INFO FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() ORDER BY TIME DESC"
	}
	return ""
}

// apply runs one migration and records it. It reports false when another
// migrator applied the version first: SQLite has no lock outside a transaction,
// so the pending list read before this transaction began may be stale.
func (m *Migrator) apply(ctx context.Context, conn *sql.Conn, mg Migration) (bool, error) {
	if m.dialect == store.MySQL {
		return m.applyMySQL(ctx, conn, mg)
	}
	// PostgreSQL and SQLite apply the whole migration atomically.
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: begin %03d_%s: %w", mg.Version, mg.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	sel := "SELECT COUNT(*) FROM hubsync_migration WHERE version = ?"
	if m.dialect == store.Postgres {
		sel = "SELECT COUNT(*) FROM hubsync_migration WHERE version = $1"
	}
	var n int
	if err := tx.QueryRowContext(ctx, sel, mg.Version).Scan(&n); err != nil {
		return false, fmt.Errorf("migrate: read hubsync_migration: %w", err)
	}
	if n > 0 {
		return false, nil
	}
	for _, stmt := range SplitStatements(mg.SQL) {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return false, fmt.Errorf("migrate: apply %s %03d_%s: %w\nstatement: %s", m.dialect, mg.Version, mg.Name, err, stmt)
		}
	}
	ins := "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (?, ?, ?)"
	if m.dialect == store.Postgres {
		ins = "INSERT INTO hubsync_migration (version, name, applied_at) VALUES ($1, $2, $3)"
	}
	if _, err := tx.ExecContext(ctx, ins, mg.Version, mg.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return false, fmt.Errorf("migrate: record %03d_%s: %w", mg.Version, mg.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate: commit %03d_%s: %w", mg.Version, mg.Name, err)
	}
	return true, nil
}

// applyMySQL runs one migration on MySQL/MariaDB, which commit each DDL
// statement at once: a migrator stopped part-way (killed, its connection
// lost) leaves the statements it ran. So it records, in
// hubsync_migration_progress, how many statements of the migration are done
// after each one, and a later run resumes after them. The statement a stop
// may have cut off between its commit and its progress row runs again: an
// error saying that what it makes is there already (or what it drops is
// gone) counts as done, for that one statement only; DML statements of a
// migration are written to give the same result when run twice.
func (m *Migrator) applyMySQL(ctx context.Context, conn *sql.Conn, mg Migration) (bool, error) {
	var n int
	if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM hubsync_migration WHERE version = ?", mg.Version).Scan(&n); err != nil {
		return false, fmt.Errorf("migrate: read hubsync_migration: %w", err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := conn.ExecContext(ctx, createProgressTable); err != nil {
		return false, fmt.Errorf("migrate: create hubsync_migration_progress: %w", err)
	}
	var done int
	err := conn.QueryRowContext(ctx, "SELECT statements FROM hubsync_migration_progress WHERE version = ?", mg.Version).Scan(&done)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("migrate: read hubsync_migration_progress: %w", err)
	}
	for i, stmt := range SplitStatements(mg.SQL) {
		if i < done {
			continue
		}
		if _, err := conn.ExecContext(ctx, stmt); err != nil && !(i == done && alreadyDone(err)) {
			return false, fmt.Errorf("migrate: apply %s %03d_%s (statement %d; the ones before it are applied, and the next run resumes here): %w\nstatement: %s", m.dialect, mg.Version, mg.Name, i+1, err, stmt)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO hubsync_migration_progress (version, statements) VALUES (?, ?) ON DUPLICATE KEY UPDATE statements = VALUES(statements)", mg.Version, i+1); err != nil {
			return false, fmt.Errorf("migrate: record progress of %03d_%s: %w", mg.Version, mg.Name, err)
		}
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: begin %03d_%s: %w", mg.Version, mg.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if _, err := tx.ExecContext(ctx, "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (?, ?, ?)", mg.Version, mg.Name, time.Now().UTC().Format(time.RFC3339)); err != nil {
		return false, fmt.Errorf("migrate: record %03d_%s: %w", mg.Version, mg.Name, err)
	}
	if _, err := tx.ExecContext(ctx, "DELETE FROM hubsync_migration_progress WHERE version = ?", mg.Version); err != nil {
		return false, fmt.Errorf("migrate: record %03d_%s: %w", mg.Version, mg.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate: commit %03d_%s: %w", mg.Version, mg.Name, err)
	}
	return true, nil
}

const createProgressTable = "CREATE TABLE IF NOT EXISTS hubsync_migration_progress (version INT PRIMARY KEY, statements INT NOT NULL)"

// alreadyDoneCodes are the MySQL/MariaDB errors of a DDL or DML statement
// that ran before: the table, column, key or row it makes exists, or what it
// drops does not.
var alreadyDoneCodes = []string{
	"Error 1050", // ER_TABLE_EXISTS_ERROR
	"Error 1060", // ER_DUP_FIELDNAME
	"Error 1061", // ER_DUP_KEYNAME
	"Error 1062", // ER_DUP_ENTRY
	"Error 1068", // ER_MULTIPLE_PRI_KEY
	"Error 1091", // ER_CANT_DROP_FIELD_OR_KEY
	"Error 1826", // ER_FK_DUP_NAME
}

func alreadyDone(err error) bool {
	s := err.Error()
	return slices.ContainsFunc(alreadyDoneCodes, func(code string) bool { return strings.HasPrefix(s, code+" ") || strings.HasPrefix(s, code+":") })
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (m *Migrator) applied(ctx context.Context, q querier) ([]int, error) {
	rows, err := q.QueryContext(ctx, "SELECT version FROM hubsync_migration ORDER BY version")
	if err != nil {
		if isMissingTable(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("migrate: read hubsync_migration: %w", err)
	}
	defer rows.Close()
	var vs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		vs = append(vs, v)
	}
	return vs, rows.Err()
}

func isMissingTable(err error) bool {
	s := strings.ToLower(err.Error())
	return strings.Contains(s, "no such table") || // SQLite
		strings.Contains(s, "does not exist") || // PostgreSQL 42P01
		strings.Contains(s, "1146") // MySQL ER_NO_SUCH_TABLE
}

var createVersionTable = map[store.Dialect]string{
	store.SQLite:   "CREATE TABLE IF NOT EXISTS hubsync_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
	store.Postgres: "CREATE TABLE IF NOT EXISTS hubsync_migration (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
	store.MySQL:    "CREATE TABLE IF NOT EXISTS hubsync_migration (version INT PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(64) NOT NULL)",
}

// lock serialises migrators on one database.
func (m *Migrator) lock(ctx context.Context, conn *sql.Conn) (func(), error) {
	switch m.dialect {
	case store.Postgres:
		// The key is arbitrary but fixed: "hubsync" in ASCII.
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(7526474121599387)"); err != nil {
			return nil, fmt.Errorf("migrate: lock: %w", err)
		}
		return func() { conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock(7526474121599387)") }, nil //nolint:errcheck
	case store.MySQL:
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(CONCAT(DATABASE(), '.hubsync_migrate'), 60)").Scan(&got); err != nil {
			return nil, fmt.Errorf("migrate: lock: %w", err)
		}
		if got.Int64 != 1 {
			return nil, errors.New("migrate: another migrator held the lock for 60 s; retry when it has finished")
		}
		return func() {
			conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(CONCAT(DATABASE(), '.hubsync_migrate'))") //nolint:errcheck
		}, nil
	default:
		// SQLite: every migration runs in an immediate transaction (see the DSN from
		// sqlitestore.ParseURL), which already admits one writer at a time.
		return func() {}, nil
	}
}

// SplitStatements splits a migration into statements at semicolons that end a
// line, skipping comment-only and blank chunks. Migrations must not put two
// statements on one line or end a line inside a string with a semicolon. A
// PostgreSQL function body between $$ quotes is one statement with the
// CREATE FUNCTION around it: its lines never end one.
func SplitStatements(sqlText string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		if s == "" {
			return
		}
		onlyComments := true
		for _, line := range strings.Split(s, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
				onlyComments = false
			}
		}
		if !onlyComments {
			out = append(out, s)
		}
	}
	inBody := false
	for _, line := range strings.Split(sqlText, "\n") {
		trimmed := strings.TrimRight(line, " \t\r")
		if strings.Count(line, "$$")%2 == 1 {
			inBody = !inBody
		}
		if !inBody && strings.HasSuffix(trimmed, ";") {
			cur.WriteString(strings.TrimSuffix(trimmed, ";"))
			flush()
			continue
		}
		cur.WriteString(line)
		cur.WriteString("\n")
	}
	flush()
	return out
}
