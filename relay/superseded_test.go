package relay

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// setupOn is setup on a database of dialect d.
func setupOn(t *testing.T, d store.Dialect) *bundle {
	t.Helper()
	clock := storetest.NewClock(time.Time{})
	st, err := hubsync.NewStore(dbtest.Migrated(t, d).DB, d, store.Config{Now: clock.Now, Retry: store.RetryPolicy{BackoffBase: time.Second, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{st: st, clock: clock, bus: NewBus()}
}

// A dead letter re-queued after a later event of its record reached the bus
// is not delivered (it would undo the later one on the subscribers' side):
// it is marked processed. A re-queued dead letter with nothing later
// delivered is delivered as usual.
func TestRequeuedDeadLetterAfterALaterDeliveryIsNotDelivered(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupOn(t, d)
		st := b.st
		ctx := context.Background()
		stale := b.enqueue(t, "r1", 2) // v1, v2
		alone := b.enqueue(t, "r2", 1)
		// v1 of r1 and r2's only event become dead letters; v2 waits.
		evs, err := st.Internal().Claim(ctx, store.ClaimParams{Limit: 10, LeaseDuration: time.Minute, Owner: "test"})
		if err != nil || len(evs) != 3 {
			t.Fatalf("claim = %d events, %v; want 3", len(evs), err)
		}
		for _, ev := range evs {
			if ev.Lane != ev.Seq {
				t.Fatalf("event %s in its first lane has Lane %d, Seq %d; the relay looks up only re-queued events, Lane != Seq", ev.ID, ev.Lane, ev.Seq)
			}
			switch ev.ID {
			case stale[0], alone[0]:
				if err := st.Internal().Fail(ctx, ev.Lease(), "subscriber down"); err != nil {
					t.Fatal(err)
				}
			default:
				if err := st.Internal().Release(ctx, 0, ev.Lease()); err != nil {
					t.Fatal(err)
				}
			}
		}
		var rec recorder
		if err := b.bus.Subscribe("rec", rec.handle); err != nil {
			t.Fatal(err)
		}
		r, err := New(st, b.bus, Config{Owner: "relay-1", PollInterval: time.Hour, LeaseDuration: time.Minute, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rec.ids(); fmt.Sprint(got) != fmt.Sprint([]string{stale[1]}) {
			t.Fatalf("delivered %v; want v2 alone", got)
		}
		if n, err := st.Internal().Requeue(ctx, stale[0], alone[0]); err != nil || n != 2 {
			t.Fatalf("requeue = %d, %v", n, err)
		}
		if _, err := r.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "every event processed", b.allProcessed(t, append(stale, alone...)))
		if got := rec.ids(); fmt.Sprint(got) != fmt.Sprint([]string{stale[1], alone[0]}) {
			t.Fatalf("delivered %v; want v2 of r1, then r2's re-queued event, and never r1's stale v1", got)
		}
	})
}

// A dead letter re-queued while its record's later event is still pending is
// claimed in one batch behind it (a later lane): the relay delivers the later
// event and does not deliver the stale one after it, though the later one is
// not marked processed until the batch ends.
func TestRequeuedDeadLetterInTheSameBatchAsItsLaterEvent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupOn(t, d)
		st := b.st
		ctx := context.Background()
		ids := b.enqueue(t, "r1", 2) // v1, v2
		evs, err := st.Internal().Claim(ctx, store.ClaimParams{Limit: 10, LeaseDuration: time.Minute, Owner: "test"})
		if err != nil || len(evs) != 2 {
			t.Fatalf("claim = %d events, %v; want 2", len(evs), err)
		}
		for _, ev := range evs {
			if ev.ID == ids[0] {
				if err := st.Internal().Fail(ctx, ev.Lease(), "subscriber down"); err != nil {
					t.Fatal(err)
				}
			} else if err := st.Internal().Release(ctx, 0, ev.Lease()); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := st.Internal().Requeue(ctx, ids[0]); err != nil || n != 1 {
			t.Fatalf("requeue = %d, %v", n, err)
		}
		var rec recorder
		if err := b.bus.Subscribe("rec", rec.handle); err != nil {
			t.Fatal(err)
		}
		r, err := New(st, b.bus, Config{Owner: "relay-1", PollInterval: time.Hour, LeaseDuration: time.Minute, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := r.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := rec.ids(); fmt.Sprint(got) != fmt.Sprint([]string{ids[1]}) {
			t.Fatalf("delivered %v; want v2 alone (v1, re-queued behind it, is stale)", got)
		}
		testwait.For(t, "both events processed", b.allProcessed(t, ids))
	})
}
