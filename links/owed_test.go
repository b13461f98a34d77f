package links_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// TestOwed: owed fields accumulate without duplicates, and a pushed state
// clears only the fields it carried.
func TestOwed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		if err := l.AddOwed(ctx, "hubspot", "contacts", "a", []string{"phone", "first_name"}); err != nil {
			t.Fatal(err)
		}
		if err := l.AddOwed(ctx, "hubspot", "contacts", "a", []string{"phone", "last_name"}); err != nil {
			t.Fatal(err)
		}
		got, err := l.LookupOwedMany(ctx, "hubspot", "contacts", []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"first_name", "last_name", "phone"}; len(got) != 1 || !slices.Equal(got["a"], want) {
			t.Fatalf("owed %v, want a: %v", got, want)
		}
		err = l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "a", ExternalID: "1", Version: 3,
			Fields: map[string]any{"phone": "1"}, EventDate: time.Unix(1, 0), Carried: []string{"first_name", "phone"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ = l.LookupOwedMany(ctx, "hubspot", "contacts", []string{"a"}); !slices.Equal(got["a"], []string{"last_name"}) {
			t.Fatalf("after a write that carried two: %v", got)
		}
		err = l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "a", ExternalID: "1", Version: 4,
			EventDate: time.Unix(2, 0), Carried: []string{"last_name"}}})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ = l.LookupOwedMany(ctx, "hubspot", "contacts", []string{"a"}); len(got) != 0 {
			t.Fatalf("after carrying all: %v", got)
		}
	})
}
