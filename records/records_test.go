package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func TestCRUD(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "a@example.com", "age": 41, "gone": nil})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Version != 1 || rec.Fields["email"] != "a@example.com" || rec.Fields["age"] != json.Number("41") {
			t.Fatalf("insert = %+v", rec)
		}
		if _, ok := rec.Fields["gone"]; ok {
			t.Fatal("a nil field was stored")
		}
		got, err := b.svc.Get(ctx, "contacts", rec.ID)
		if err != nil || got.Version != 1 || got.Fields["age"] != json.Number("41") || !got.CreatedAt.Equal(b.clock.Now()) {
			t.Fatalf("get = %+v, %v", got, err)
		}
		up, err := b.svc.Update(ctx, "contacts", rec.ID, 1, map[string]any{"age": nil, "name": "Ann"})
		if err != nil {
			t.Fatal(err)
		}
		if up.Version != 2 || up.Fields["name"] != "Ann" || up.Fields["age"] != nil {
			t.Fatalf("update = %+v", up)
		}
		same, err := b.svc.Update(ctx, "contacts", rec.ID, 2, map[string]any{"name": "Ann"})
		if err != nil || same.Version != 2 {
			t.Fatalf("a no-op update = %+v, %v; want version 2 unchanged", same, err)
		}
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "b@example.com"}); err != nil {
			t.Fatal(err)
		}
		page, err := b.svc.List(ctx, "contacts", ListOptions{Limit: 1})
		if err != nil || len(page) != 1 || page[0].ID != rec.ID {
			t.Fatalf("list page 1 = %+v, %v", page, err)
		}
		page, err = b.svc.List(ctx, "contacts", ListOptions{After: rec.ID})
		if err != nil || len(page) != 1 || page[0].Fields["email"] != "b@example.com" {
			t.Fatalf("list page 2 = %+v, %v", page, err)
		}
		if err := b.svc.Delete(ctx, "contacts", rec.ID, 2); err != nil {
			t.Fatal(err)
		}
		if _, err := b.svc.Get(ctx, "contacts", rec.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get after delete: %v, want ErrNotFound", err)
		}

		evs := b.outbound(t, rec.ID)
		if len(evs) != 3 {
			t.Fatalf("%d outbound events, want create, update, delete (the no-op writes none)", len(evs))
		}
		for i, want := range []string{store.EventCreate, store.EventUpdate, store.EventDelete} {
			if evs[i].EventType != want || evs[i].Destination != "hubspot" {
				t.Fatalf("outbound %d = %s to %s, want %s to hubspot", i, evs[i].EventType, evs[i].Destination, want)
			}
		}
		if evs[0].Old != nil || evs[0].Payload.Version != 1 || evs[0].Payload.Fields["email"] != "a@example.com" {
			t.Fatalf("create event = %+v / %+v", evs[0].Payload, evs[0].Old)
		}
		if evs[1].Old.Version != 1 || evs[1].Payload.Version != 2 || evs[1].Payload.Fields["name"] != "Ann" || evs[1].Old.Fields["age"] != json.Number("41") {
			t.Fatalf("update event = %+v / %+v", evs[1].Payload, evs[1].Old)
		}
		if evs[2].Old.Version != 2 || evs[2].Payload.Version != 3 || len(evs[2].Payload.Metadata) != 0 {
			t.Fatalf("delete event = %+v / %+v", evs[2].Payload, evs[2].Old)
		}
		ins := b.internal(t, rec.ID)
		if len(ins) != 3 || ins[0].EventType != store.EventRecordCreated || ins[1].EventType != store.EventRecordUpdated || ins[2].EventType != store.EventRecordDeleted {
			t.Fatalf("internal events = %+v", ins)
		}
		if src, ok := ins[0].Metadata["sync_source"]; !ok || src != "" {
			t.Fatalf("internal metadata = %v, want sync_source empty for a local change", ins[0].Metadata)
		}
	})
}

func TestErrors(t *testing.T) {
	b := setup(t, store.SQLite, Config{ObjectTypes: []string{"contacts"}, MaxFieldsBytes: 64})
	ctx := context.Background()
	rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "a@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"stale update", func() error { _, err := b.svc.Update(ctx, "contacts", rec.ID, 7, map[string]any{"x": 1}); return err }(), ErrConflict},
		{"stale delete", b.svc.Delete(ctx, "contacts", rec.ID, 2), ErrConflict},
		{"missing", func() error { _, err := b.svc.Update(ctx, "contacts", "nope", 1, nil); return err }(), ErrNotFound},
		{"bad type", func() error { _, err := b.svc.Insert(ctx, "Contacts!", nil); return err }(), ErrInvalid},
		{"unknown type", func() error { _, err := b.svc.Insert(ctx, "deals", nil); return err }(), ErrUnknownObjectType},
		{"reserved name", func() error { _, err := b.svc.Insert(ctx, "contacts", map[string]any{"$x": 1}); return err }(), ErrInvalid},
		{"empty name", func() error { _, err := b.svc.Insert(ctx, "contacts", map[string]any{"": 1}); return err }(), ErrInvalid},
		{"too large", func() error {
			_, err := b.svc.Insert(ctx, "contacts", map[string]any{"x": strings.Repeat("a", 100)})
			return err
		}(), ErrTooLarge},
		{"version 0", func() error { _, err := b.svc.Update(ctx, "contacts", rec.ID, 0, nil); return err }(), ErrInvalid},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
	var ce *ConflictError
	if _, err := b.svc.Update(ctx, "contacts", rec.ID, 5, nil); !errors.As(err, &ce) || ce.Current != 1 {
		t.Fatalf("conflict error = %v, want current version 1", err)
	}
	if n := b.count(t, "hubsync_record"); n != 1 {
		t.Fatalf("%d records after failed writes, want 1", n)
	}
	if n := b.count(t, "_System_IntegrationOutbound"); n != 1 {
		t.Fatalf("%d outbound events after failed writes, want 1", n)
	}
}

// failingOutbound makes the outbound enqueue of one destination fail, after the
// record row and the internal event were written in the same transaction.
type failingStore struct {
	store.Store
	dest string
}

func (s failingStore) Outbound() store.OutboundRepository {
	return failingOutbound{s.Store.Outbound(), s.dest}
}

type failingOutbound struct {
	store.OutboundRepository
	dest string
}

func (o failingOutbound) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.OutboundEvent) (store.EnqueueResult, error) {
	if ev.Destination == o.dest {
		return store.EnqueueResult{}, errors.New("injected enqueue failure")
	}
	return o.OutboundRepository.EnqueueTx(ctx, tx, ev)
}

func TestRollbackLeavesNothing(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "a@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		broken, err := New(failingStore{b.st, "broken"}, b.links, Config{Destinations: []string{"hubspot", "broken"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := broken.Insert(ctx, "contacts", map[string]any{"email": "b@example.com"}); err == nil {
			t.Fatal("insert succeeded despite the failing enqueue")
		}
		if _, err := broken.Update(ctx, "contacts", rec.ID, 1, map[string]any{"email": "c@example.com"}); err == nil {
			t.Fatal("update succeeded despite the failing enqueue")
		}
		if err := broken.Delete(ctx, "contacts", rec.ID, 1); err == nil {
			t.Fatal("delete succeeded despite the failing enqueue")
		}
		got, err := b.svc.Get(ctx, "contacts", rec.ID)
		if err != nil || got.Version != 1 || got.Fields["email"] != "a@example.com" {
			t.Fatalf("record after rolled back writes = %+v, %v", got, err)
		}
		for table, want := range map[string]int{"hubsync_record": 1, "_System_OutboxEvent": 1, "_System_IntegrationOutbound": 1} {
			if n := b.count(t, table); n != want {
				t.Errorf("%s has %d rows, want %d: a rolled back write left rows behind", table, n, want)
			}
		}
	})
}

func TestConcurrentUpdatesCommitOrder(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"n": 0})
		if err != nil {
			t.Fatal(err)
		}
		const writers = 6
		// Round 1: everyone updates from version 1; exactly one wins.
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = b.svc.Update(ctx, "contacts", rec.ID, 1, map[string]any{"winner": i})
			}()
		}
		wg.Wait()
		wins := 0
		for _, err := range errs {
			switch {
			case err == nil:
				wins++
			case !errors.Is(err, ErrConflict):
				t.Fatalf("update: %v, want success or ErrConflict", err)
			}
		}
		if wins != 1 {
			t.Fatalf("%d updates from version 1 succeeded, want exactly 1", wins)
		}
		// Round 2: everyone retries on conflict until its write lands.
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					cur, err := b.svc.Get(ctx, "contacts", rec.ID)
					if err != nil {
						errs[i] = err
						return
					}
					_, err = b.svc.Update(ctx, "contacts", rec.ID, cur.Version, map[string]any{"n": fmt.Sprint(i), "v": cur.Version})
					if !errors.Is(err, ErrConflict) {
						errs[i] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		evs := b.outbound(t, rec.ID)
		if len(evs) != 2+writers {
			t.Fatalf("%d outbound events, want %d", len(evs), 2+writers)
		}
		for i, ev := range evs {
			if ev.Payload.Version != int64(i+1) {
				t.Fatalf("event %d has version %d: events are not in commit order", i, ev.Payload.Version)
			}
			if i > 0 && ev.Old.Version != int64(i) {
				t.Fatalf("event %d: old version %d, want %d", i, ev.Old.Version, i)
			}
		}
		ins := b.internal(t, rec.ID)
		for i, ev := range ins {
			if ev.Payload.Version != int64(i+1) {
				t.Fatalf("internal event %d has version %d: not in commit order", i, ev.Payload.Version)
			}
		}
	})
}

func TestRollbackInsideTx(t *testing.T) {
	b := setup(t, store.SQLite, Config{})
	ctx := context.Background()
	boom := errors.New("boom")
	err := b.svc.inTx(ctx, func(tx *writeTx) error {
		rec, err := b.svc.createTx(ctx, tx, "contacts", newID(), 1, map[string]any{"a": 1})
		if err != nil {
			return err
		}
		if err := b.svc.touchClocks(ctx, tx.Tx, "contacts", rec.ID, []string{"a"}, b.clock.Now()); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	for _, table := range []string{"hubsync_record", "hubsync_field_clock", "_System_OutboxEvent", "_System_IntegrationOutbound"} {
		if n := b.count(t, table); n != 0 {
			t.Errorf("%s has %d rows after rollback", table, n)
		}
	}
}

// TestTouchClocksNeverBackwards: the clocks of many fields move in one
// statement, each only forwards: a later time advances every field named, an
// earlier one sets only the fields that had no clock and leaves the rest.
func TestTouchClocksNeverBackwards(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Truncate(time.Second)
		touch := func(at time.Time, names ...string) {
			t.Helper()
			if err := b.svc.inTx(ctx, func(tx *writeTx) error {
				return b.svc.touchClocks(ctx, tx.Tx, "contacts", "r1", names, at)
			}); err != nil {
				t.Fatal(err)
			}
		}
		touch(t0.Add(2*time.Minute), "a", "b", "c")
		touch(t0.Add(time.Minute), "a", "b", "d", "d")
		touch(t0.Add(3*time.Minute), "c")
		touch(t0.Add(4*time.Minute), "a", "e")
		var got map[string]time.Time
		if err := b.svc.inTx(ctx, func(tx *writeTx) error {
			var err error
			got, err = b.svc.clocks(ctx, tx.Tx, "contacts", "r1")
			return err
		}); err != nil {
			t.Fatal(err)
		}
		want := map[string]time.Time{
			"a": t0.Add(4 * time.Minute), "b": t0.Add(2 * time.Minute), "c": t0.Add(3 * time.Minute),
			"d": t0.Add(time.Minute), "e": t0.Add(4 * time.Minute),
		}
		if len(got) != len(want) {
			t.Fatalf("clocks = %v, want %v", got, want)
		}
		for f, at := range want {
			if !got[f].Equal(at) {
				t.Errorf("clock %s = %s, want %s", f, got[f], at)
			}
		}
	})
}

// TestUnsendableValuesRefused: a mapped field's value the outbound worker
// could never send (an object, an array, a number beyond float64) is
// refused at the write (400), not accepted and then dead-lettered with every
// later write of the record. Unmapped fields may hold anything.
func TestUnsendableValuesRefused(t *testing.T) {
	b := setup(t, store.SQLite, Config{})
	ctx := context.Background()
	for name, v := range map[string]any{
		"object": map[string]any{"a": []any{1.0, 2.0}},
		"array":  []any{"Ann"},
		"huge":   json.Number("1e400"),
	} {
		if _, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": name + "@example.com", "first_name": v}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "first_name") {
			t.Errorf("insert with a first_name %s: %v; want ErrInvalid naming first_name", name, err)
		}
	}
	rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "ann@example.com", "notes": map[string]any{"a": []any{1.0}}})
	if err != nil {
		t.Fatalf("unmapped field holding an object: %v", err)
	}
	if _, err := b.svc.Update(ctx, "contacts", rec.ID, rec.Version, map[string]any{"first_name": map[string]any{}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("update with an object first_name: %v; want ErrInvalid", err)
	}
	if n := b.count(t, "_System_IntegrationOutbound"); n != 1 {
		t.Errorf("%d outbound events; want the one valid insert's", n)
	}
}
