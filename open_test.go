package hubsync_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/store"
)

func TestOpenSQLiteClaimComplete(t *testing.T) {
	ctx := context.Background()
	db, err := hubsync.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "hub.db"), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := hubsync.CheckSchema(ctx, db); !errors.Is(err, migrate.ErrNotMigrated) {
		t.Fatalf("CheckSchema before Migrate = %v, want ErrNotMigrated", err)
	}
	if applied, err := hubsync.Migrate(ctx, db); err != nil || len(applied) == 0 {
		t.Fatalf("Migrate = %v, %v", applied, err)
	}
	if err := hubsync.CheckSchema(ctx, db); err != nil {
		t.Fatalf("CheckSchema after Migrate: %v", err)
	}
	tx, err := db.SQL.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Store.Outbound().EnqueueTx(ctx, tx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts",
		RecordID: "1", EventType: store.EventCreate, Payload: json.RawMessage(`{"id":"1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	evs, err := db.Store.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot"})
	if err != nil || len(evs) != 1 || evs[0].ID != res.ID {
		t.Fatalf("claim = %v, %v; want event %s", evs, err, res.ID)
	}
	if err := db.Store.Outbound().Complete(ctx, evs[0].Lease()); err != nil {
		t.Fatal(err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := hubsync.Open(ctx, "", store.Config{}); err == nil || !strings.Contains(err.Error(), "database URL") {
		t.Errorf("Open(\"\") = %v, want an error naming the database URL", err)
	}
	_, err := hubsync.Open(ctx, "postgres://nobody@127.0.0.1:1/none?sslmode=disable&connect_timeout=2", store.Config{})
	if err == nil || !strings.Contains(err.Error(), "database URL") {
		t.Errorf("Open of an unreachable server = %v, want an error naming the database URL", err)
	}
}

func TestParseDatabaseURL(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		dialect store.Dialect
		driver  string
		dsn     []string // substrings the DSN must contain
	}{
		{"sqlite:hub.db", store.SQLite, "hubsync-sqlite", []string{"file:hub.db?", "_pragma=busy_timeout(10000)", "_txlock=immediate"}},
		{"sqlite://dir/hub.db?cache=shared", store.SQLite, "hubsync-sqlite", []string{"file:dir/hub.db?", "&cache=shared"}},
		{"postgres://u@h:5432/db?sslmode=disable", store.Postgres, "pgx", []string{"postgres://u@h:5432/db?sslmode=disable"}},
		{"postgresql://u@h/db", store.Postgres, "pgx", []string{"postgresql://u@h/db"}},
		{"mysql://u:p@h/db", store.MySQL, "mysql", []string{"u:p@tcp(h:3306)/db?", "parseTime=true", "loc=UTC", "interpolateParams=true"}},
		{"mariadb://u@h:3307/db", store.MySQL, "mysql", []string{"u@tcp(h:3307)/db?"}},
		{"mysql://u@h/db?clientFoundRows=false", store.MySQL, "mysql", []string{"clientFoundRows=false"}},
		{"mysql://u@h/db?clientFoundRows=FALSE", store.MySQL, "mysql", []string{"clientFoundRows=FALSE"}},
		{"mysql://u@h/db?clientFoundRows=0", store.MySQL, "mysql", []string{"clientFoundRows=0"}},
	} {
		u, err := hubsync.ParseDatabaseURL(tc.raw)
		if err != nil {
			t.Fatalf("%s: %v", tc.raw, err)
		}
		if u.Dialect != tc.dialect || u.Driver != tc.driver {
			t.Fatalf("%s = %+v, want dialect %s driver %s", tc.raw, u, tc.dialect, tc.driver)
		}
		for _, s := range tc.dsn {
			if !strings.Contains(u.DSN, s) {
				t.Fatalf("%s: DSN %q lacks %q", tc.raw, u.DSN, s)
			}
		}
	}
	for _, raw := range []string{"", "sqlite:", "mysql://u@h/", "oracle://x", "postgres://%zz",
		"mysql://u@h/db?clientFoundRows=true", "mariadb://u@h/db?clientFoundRows=1"} {
		if _, err := hubsync.ParseDatabaseURL(raw); !errors.Is(err, store.ErrDatabaseURL) {
			t.Fatalf("ParseDatabaseURL(%q) = %v, want ErrDatabaseURL", raw, err)
		}
		if _, err := hubsync.Open(context.Background(), raw, store.Config{}); !errors.Is(err, store.ErrDatabaseURL) {
			t.Fatalf("Open(%q) = %v, want ErrDatabaseURL", raw, err)
		}
	}
}
