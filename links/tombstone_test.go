package links_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

func TestTombstones(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		t0 := time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)
		put := func(tb links.Tombstone) {
			t.Helper()
			tx, err := st.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if err := l.PutTombstoneTx(ctx, tx, tb); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}
		get := func(ext string) (links.Tombstone, bool) {
			t.Helper()
			tb, ok, err := l.Tombstone(ctx, "hubspot", "contacts", ext)
			if err != nil {
				t.Fatal(err)
			}
			return tb, ok
		}
		if _, ok := get("1"); ok {
			t.Fatal("tombstone before any was written")
		}
		merged := links.Tombstone{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneMerged, SurvivorID: "2", OccurredAt: t0}
		put(merged)
		put(merged) // idempotent
		tb, ok := get("1")
		want := merged
		want.OccurredAt = t0.Truncate(time.Microsecond)
		if !ok || tb != want {
			t.Fatalf("tombstone = %+v %v, want %+v", tb, ok, want)
		}
		// MergedMany finds the merged ones only.
		put(links.Tombstone{Destination: "hubspot", ObjectType: "contacts", ExternalID: "7", Kind: links.TombstoneDeleted, OccurredAt: t0})
		put(links.Tombstone{Destination: "hubspot", ObjectType: "companies", ExternalID: "8", Kind: links.TombstoneMerged, SurvivorID: "9", OccurredAt: t0})
		if got, err := l.MergedMany(ctx, "hubspot", "contacts", []string{"1", "7", "8", "none"}); err != nil || len(got) != 1 || got["1"] != want {
			t.Fatalf("MergedMany = %+v, %v; want only %+v", got, err, want)
		}
		// An older or equal one leaves it; a newer one replaces it.
		put(links.Tombstone{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneDeleted, OccurredAt: t0.Add(-time.Second)})
		put(links.Tombstone{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneDeleted, OccurredAt: t0})
		if tb, _ := get("1"); tb != want {
			t.Fatalf("after older puts = %+v, want %+v", tb, want)
		}
		newer := links.Tombstone{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneDeleted, OccurredAt: t0.Add(time.Second).Truncate(time.Microsecond)}
		put(newer)
		if tb, _ := get("1"); tb != newer {
			t.Fatalf("after a newer put = %+v, want %+v", tb, newer)
		}
		// Another destination or object type is separate.
		if _, ok, _ := l.Tombstone(ctx, "salesforce", "contacts", "1"); ok {
			t.Fatal("tombstone leaked to another destination")
		}
		if _, ok, _ := l.Tombstone(ctx, "hubspot", "companies", "1"); ok {
			t.Fatal("tombstone leaked to another object type")
		}
		// Remove only removes an older tombstone.
		remove := func(before time.Time) {
			t.Helper()
			if err := inTx(ctx, st.DB(), func(tx *sql.Tx) error {
				return l.RemoveTombstoneTx(ctx, tx, "hubspot", "contacts", "1", before)
			}); err != nil {
				t.Fatal(err)
			}
		}
		remove(newer.OccurredAt)
		if _, ok := get("1"); !ok {
			t.Fatal("remove took a tombstone that is not older")
		}
		remove(newer.OccurredAt.Add(time.Microsecond))
		if _, ok := get("1"); ok {
			t.Fatal("remove left an older tombstone")
		}
		for _, bad := range []links.Tombstone{
			{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneMerged, OccurredAt: t0},
			{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneMerged, SurvivorID: "1", OccurredAt: t0},
			{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneDeleted, SurvivorID: "2", OccurredAt: t0},
			{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: "gone", OccurredAt: t0},
			{Destination: "hubspot", ObjectType: "contacts", ExternalID: "1", Kind: links.TombstoneDeleted},
			{Destination: "hubspot", ObjectType: "contacts", Kind: links.TombstoneDeleted, OccurredAt: t0},
		} {
			if err := l.PutTombstoneTx(ctx, st.DB(), bad); !errors.Is(err, links.ErrInvalid) {
				t.Errorf("put %+v: %v, want ErrInvalid", bad, err)
			}
		}
	})
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
