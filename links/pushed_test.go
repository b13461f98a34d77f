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

// TestPushedNeverBackwards checks that an older state written last (two
// outbound writers racing) does not replace a newer one: a higher Seq wins,
// and with equal Seqs (states from before sequences) the higher Version.
func TestPushedNeverBackwards(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		st := newStore(t, d)
		l := links.New(st)
		ctx := context.Background()
		at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
		put := func(states ...links.Pushed) {
			t.Helper()
			if err := l.PushedMany(ctx, "hubspot", "contacts", states); err != nil {
				t.Fatal(err)
			}
		}
		put(links.Pushed{RecordID: "a", ExternalID: "101", Version: 6, Seq: 6, Fields: map[string]any{"email": "new@x.io"}, EventDate: at},
			links.Pushed{RecordID: "b", ExternalID: "102", Version: 6, Fields: map[string]any{"email": "new@x.io"}, EventDate: at})
		// The older writes finish last; one state has a later EventDate (a
		// replica whose clock is ahead) to show that dates do not decide.
		put(links.Pushed{RecordID: "a", ExternalID: "101", Version: 5, Seq: 5, Fields: map[string]any{"email": "old@x.io"}, EventDate: at.Add(time.Minute)},
			links.Pushed{RecordID: "b", ExternalID: "102", Version: 5, Fields: map[string]any{"email": "old@x.io"}, EventDate: at.Add(time.Minute)})
		got, err := l.LookupPushedMany(ctx, "hubspot", "contacts", []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range []string{"a", "b"} {
			if p := got[rec]; p.Version != 6 || p.Fields["email"] != "new@x.io" || !p.EventDate.Equal(at) {
				t.Errorf("state of %s after an older write = %+v, want version 6 kept", rec, p)
			}
		}
		if got["a"].Seq != 6 {
			t.Errorf("Seq of a = %d, want 6", got["a"].Seq)
		}
		// A newer state replaces it, whatever its version (a record created
		// again restarts its versions, never its Seq), and an equal one too.
		put(links.Pushed{RecordID: "a", ExternalID: "101", Version: 1, Seq: 9, Fields: map[string]any{"email": "again@x.io"}, EventDate: at},
			links.Pushed{RecordID: "b", ExternalID: "102", Version: 6, Fields: map[string]any{"email": "same@x.io"}, EventDate: at})
		got, err = l.LookupPushedMany(ctx, "hubspot", "contacts", []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		if p := got["a"]; p.Version != 1 || p.Seq != 9 || p.Fields["email"] != "again@x.io" {
			t.Errorf("state of a after a newer write = %+v, want version 1 at Seq 9", p)
		}
		if p := got["b"]; p.Version != 6 || p.Fields["email"] != "same@x.io" {
			t.Errorf("state of b after an equal write = %+v, want it replaced", p)
		}
	})
}
