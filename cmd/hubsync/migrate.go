package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

func init() {
	register("migrate", command{summary: "apply schema migrations (migrate [up|status])", run: runMigrate})
}

// databaseURLDefault is the embedded default database.
const databaseURLDefault = "sqlite:hubsync.db"

func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stderr)
	dbURL := databaseURLFlag(fs)
	lockTimeout := fs.Duration("lock-timeout", migrate.LockTimeoutDefault, "how long one schema change waits for a table lock before it lets the replicas work and asks again")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync migrate [flags] [up|status]")
		fs.PrintDefaults()
	}
	// The action may come before the flags or after them.
	action := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		action, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if action == "" && fs.NArg() > 0 {
		action = fs.Arg(0)
		if err := fs.Parse(fs.Args()[1:]); err != nil { // flags after the action
			return err
		}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	action = cmp.Or(action, "up")
	if action != "up" && action != "status" {
		fs.Usage()
		return fmt.Errorf("unknown action %q: %w", action, errUsage)
	}

	if *lockTimeout <= 0 {
		return fmt.Errorf("-lock-timeout is %s; use a positive duration such as 5s", *lockTimeout)
	}
	db, err := hubsync.Open(ctx, *dbURL, store.Config{})
	if err != nil {
		return fmt.Errorf("HUBSYNC_DATABASE_URL: %w", err)
	}
	defer db.Close()
	m, err := migrate.New(db.SQL, db.Dialect)
	if err != nil {
		return err
	}
	m.LockTimeout = *lockTimeout
	m.OnLockWait = func(mg migrate.Migration, attempt int, err error) {
		table := migrate.LockWaitTable(err)
		if attempt > 1 {
			fmt.Fprintf(stderr, "migrate: %03d_%s still waits for %s (attempt %d)\n", mg.Version, mg.Name, cmp.Or(table, "a table lock"), attempt)
			return
		}
		fmt.Fprintf(stderr, "migrate: %03d_%s waited %s for a lock on %s and asks again every %s: a session holds the table (an open transaction, a report, a backup's LOCK TABLES); the replicas keep working meanwhile. Find it with:\n  %s\n  (%v)\n",
			mg.Version, mg.Name, *lockTimeout, cmp.Or(table, "its table"), *lockTimeout+2*time.Second, migrate.LockWaitHint(db.Dialect, table), err)
	}
	if action == "up" {
		applied, err := m.Up(ctx)
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(stdout, "schema is up to date")
		}
		for _, v := range applied {
			fmt.Fprintf(stdout, "applied migration %03d\n", v)
		}
	}
	st, err := m.Status(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s schema at version %d of %d", db.Dialect, st.Current, st.Latest)
	// Exit 1 unless the schema is what this binary runs with, so that a
	// deploy script can gate on `hubsync migrate status`.
	switch {
	case len(st.Unknown) > 0:
		fmt.Fprintf(stdout, " (database is NEWER than this binary: upgrade hubsync)\n")
		return errSchemaNotCurrent
	case len(st.Pending) > 0:
		fmt.Fprintf(stdout, " (%d pending: run `hubsync migrate`)\n", len(st.Pending))
		return errSchemaNotCurrent
	default:
		fmt.Fprintln(stdout)
	}
	return nil
}

// errSchemaNotCurrent makes `hubsync migrate status` exit 1 when the schema
// is not the one this binary runs with; the reason is on stdout.
var errSchemaNotCurrent = errors.New("the schema is not current (see above)")
