package demo

import (
	"encoding/json"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/store"
)

func TestRecoveryOf(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	out := func(id string) eventRef { return eventRef{store.DirectionOutbound, id} }
	in := func(id string) eventRef { return eventRef{store.DirectionInbound, id} }
	lease := func(killedAt time.Time, left time.Duration) cutLease { return cutLease{killedAt, killedAt.Add(left)} }
	cut := map[eventRef]cutLease{
		out("a"): lease(t0, time.Second), out("b"): lease(t0, 8*time.Second),
		out("c"):    lease(t0.Add(time.Minute), -time.Second), // its lease had run out
		out("dead"): lease(t0, 30*time.Second), in("x"): lease(t0, 2*time.Second),
	}
	processed := map[eventRef]time.Time{
		out("a"): t0.Add(2 * time.Second), out("b"): t0.Add(10 * time.Second),
		out("c"): t0.Add(time.Minute - time.Millisecond), // completed as the kill landed
		in("x"):  t0.Add(3 * time.Second), out("never-cut"): t0.Add(time.Hour),
	}
	rec := recoveryOf(cut, processed)
	if rec.Leased[store.DirectionOutbound] != 4 || rec.Leased[store.DirectionInbound] != 1 || rec.Leased[store.DirectionInternal] != 0 {
		t.Errorf("leased %v; want 4 outbound, 1 inbound", rec.Leased)
	}
	if l := rec.Latency[store.DirectionOutbound]; l.N != 3 || l.P50 != 2*time.Second || l.Max != 10*time.Second {
		t.Errorf("outbound %+v; want 3 processed (0, 2 s, 10 s after their kill): p50 2 s, max 10 s", l)
	}
	if l := rec.Latency[store.DirectionInbound]; l.N != 1 || l.Max != 3*time.Second {
		t.Errorf("inbound %+v; want one, 3 s", l)
	}
	if l := rec.LeaseLeft[store.DirectionOutbound]; l.N != 4 || l.P50 != 8*time.Second || l.Max != 30*time.Second {
		t.Errorf("outbound lease left %+v; want 4 (0, 1 s, 8 s, 30 s): p50 8 s, max 30 s", l)
	}
}

// TestRecoveryQueries reads, on every database, the leases of one process
// by its owner prefix (not another process's whose pid starts alike), and
// the processed dates.
func TestRecoveryQueries(t *testing.T) {
	t.Parallel()
	for _, d := range dbtest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			tdb := dbtest.New(t, d)
			db, err := hubsync.Open(ctx, tdb.URL, store.Config{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if _, err := hubsync.Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			st := db.Store
			q, err := newQueries(st.DB(), st.Dialect())
			if err != nil {
				t.Fatal(err)
			}
			claim := func(key, owner string) store.OutboundEvent {
				t.Helper()
				ev := store.OutboundEvent{Destination: key, ObjectType: "contacts", RecordID: key, EventType: store.EventUpdate, Payload: json.RawMessage(`{}`)}
				if _, err := st.Outbound().Enqueue(ctx, ev); err != nil {
					t.Fatal(err)
				}
				got, err := st.Outbound().Claim(ctx, store.ClaimParams{Key: key, Limit: 1, LeaseDuration: time.Minute, Owner: owner})
				if err != nil || len(got) != 1 {
					t.Fatalf("claim %s: %v, %v", key, got, err)
				}
				return got[0]
			}
			killed := claim("hubspot", service.OwnerPrefix(4242)+"outbound-0a0b0c0d")
			other := claim("other", service.OwnerPrefix(424)+"outbound-0a0b0c0d")

			refs, err := q.leasedBy(ctx, service.OwnerPrefix(4242))
			if err != nil {
				t.Fatal(err)
			}
			if exp, ok := refs[eventRef{store.DirectionOutbound, killed.ID}]; len(refs) != 1 || !ok || killed.LeaseExpiresDate == nil || !exp.Equal(*killed.LeaseExpiresDate) {
				t.Fatalf("leased by pid 4242: %v; want only %s, lease until %v", refs, killed.ID, killed.LeaseExpiresDate)
			}
			before := time.Now().Add(-time.Minute) // the store's clock may differ a little
			if err := st.Outbound().Complete(ctx, killed.Lease(), other.Lease()); err != nil {
				t.Fatal(err)
			}
			if refs, err := q.leasedBy(ctx, service.OwnerPrefix(4242)); err != nil || len(refs) != 0 {
				t.Fatalf("leased by pid 4242 after complete: %v, %v; want none", refs, err)
			}
			dates, err := q.processedDates(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if at, ok := dates[eventRef{store.DirectionOutbound, killed.ID}]; !ok || at.Before(before) || len(dates) != 2 {
				t.Fatalf("processed dates %v; want both events, %s processed within the minute", dates, killed.ID)
			}
		})
	}
}
