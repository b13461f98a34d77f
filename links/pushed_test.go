package links_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

func TestPushedMany(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		at := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
		big := json.Number("12345678901234567890")
		err := l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{
			{RecordID: "a", ExternalID: "101", Version: 5, Fields: map[string]any{"email": "a@x.io", "n": big}, EventDate: at},
			{RecordID: "b", ExternalID: "102", Version: 1, Fields: map[string]any{"email": "b@x.io"}, EventDate: at},
		})
		if err != nil {
			t.Fatal(err)
		}
		if id, ok, _ := l.Lookup(ctx, "hubspot", "contacts", "a"); !ok || id != "101" {
			t.Fatalf("PushedMany did not link a: %q %v", id, ok)
		}
		// b is archived: unlinked, and its state becomes a deletion marker.
		if err := l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "b", Version: 2, Deleted: true, EventDate: at.Add(time.Second)}}); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := l.Lookup(ctx, "hubspot", "contacts", "b"); ok {
			t.Fatal("an archived record is still linked")
		}
		got, err := l.LookupPushedMany(ctx, "hubspot", "contacts", []string{"a", "b", "c"})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("got %d states, want 2: %v", len(got), got)
		}
		a := got["a"]
		if a.Version != 5 || a.ExternalID != "101" || a.Deleted || !a.EventDate.Equal(at) || a.Fields["n"] != big || a.Fields["email"] != "a@x.io" {
			t.Fatalf("state of a = %+v", a)
		}
		if !a.Current("101") || a.Current("999") || a.Current("") {
			t.Fatal("Current of a linked state is wrong")
		}
		b := got["b"]
		if !b.Deleted || b.Fields != nil || b.Version != 2 || !b.Current("") || b.Current("102") {
			t.Fatalf("state of b = %+v", b)
		}
		// A state's object must be free: the link rules of LinkMany hold.
		err = l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "c", ExternalID: "101", Version: 1, EventDate: at}})
		if !errors.Is(err, links.ErrConflict) {
			t.Fatalf("pushing c to a's object: %v, want ErrConflict", err)
		}
		if err := l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "c", Version: 1, EventDate: at}}); !errors.Is(err, links.ErrInvalid) {
			t.Fatalf("a live state without an external id: %v, want ErrInvalid", err)
		}
	})
}
