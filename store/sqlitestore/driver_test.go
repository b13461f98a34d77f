package sqlitestore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/store/sqlitestore"
)

// TestOpenNewDatabaseTogether opens several connections at once on a database
// that does not exist yet. Each runs the DSN's pragmas; the first to switch the
// file to WAL holds it exclusively, and SQLite fails the others' opens at once
// with SQLITE_BUSY rather than waiting the busy timeout: the driver must retry
// them. Run against modernc's own driver name, several rounds in a hundred fail.
func TestOpenNewDatabaseTogether(t *testing.T) {
	t.Parallel()
	const conns = 6
	for round := range 100 {
		dsn, err := sqlitestore.ParseURL("sqlite:" + filepath.Join(t.TempDir(), fmt.Sprintf("r%d.db", round)))
		if err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open(sqlitestore.DriverName, dsn)
		if err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(conns)
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := db.Conn(context.Background())
				if err != nil {
					errs <- err
					return
				}
				defer c.Close()
				var mode string
				if err := c.QueryRowContext(context.Background(), "PRAGMA journal_mode").Scan(&mode); err != nil {
					errs <- err
				} else if mode != "wal" {
					errs <- fmt.Errorf("journal_mode = %q, want wal", mode)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d: a connection opened with the others: %v", round, err)
		}
		db.Close()
	}
}

// TestOpenSetsPageCache: every connection of OpenDB's pool has a page cache
// of CacheSizeKiB, and a URL's own cache_size pragma overrides it.
func TestOpenSetsPageCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"", -sqlitestore.CacheSizeKiB},
		{"?_pragma=cache_size(-1024)", -1024},
	} {
		db, err := sqlitestore.OpenDB(ctx, "sqlite:"+filepath.Join(t.TempDir(), "c.db")+tc.query)
		if err != nil {
			t.Fatal(err)
		}
		// Hold every connection of the pool at once, so each is asked.
		var conns []*sql.Conn
		for range sqlitestore.MaxOpenConnsDefault {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for i, c := range conns {
			var got int
			if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("URL query %q, connection %d: cache_size %d, want %d", tc.query, i, got, tc.want)
			}
			c.Close()
		}
		db.Close()
	}
}
