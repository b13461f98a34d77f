package pgstore_test

import (
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/pgstore"
	"github.com/hubsync/hubsync/store/storetest"
)

func newStore(t *testing.T, cfg store.Config) *pgstore.Store {
	t.Helper()
	s, err := pgstore.New(dbtest.Migrated(t, store.Postgres).DB, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Exercise(t, func(t *testing.T, cfg store.Config) store.Store { return newStore(t, cfg) })
}
