package outbound_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// owedFailingLinks fails AddOwed while fail is set, as a store error would.
type owedFailingLinks struct {
	*links.Links
	fail atomic.Bool
}

func (f *owedFailingLinks) AddOwed(ctx context.Context, destination, objectType, recordID string, fields []string) error {
	if f.fail.Load() {
		return errors.New("disk full")
	}
	return f.Links.AddOwed(ctx, destination, objectType, recordID, fields)
}

// TestOwedFieldsKeepTheirRecordUntilRecorded: a record whose change HubSpot
// refuses for good is not dead-lettered while the fields it would owe cannot
// be recorded: nothing else would carry them to HubSpot. Once they are
// recorded it is dead-lettered as before, and the record's next write
// carries the dead letter's change.
func TestOwedFieldsKeepTheirRecordUntilRecorded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, options{})
	fl := &owedFailingLinks{Links: b.links}
	w := b.worker(t, func(c *outbound.Config) { c.Links = fl })
	wl := newWorkload(b, 1)
	id := wl.insert(t, "contacts", map[string]any{"email": "owed@example.com", "first_name": "One", "phone": "1"})
	b.drain(t, w)
	setFaults := func(f hubspotsim.Faults) {
		t.Helper()
		if err := b.sim.SetFaults(f); err != nil {
			t.Fatal(err)
		}
	}
	// retries returns the failed attempts of each pending event.
	retries := func() []int {
		t.Helper()
		rows, err := b.st.DB().QueryContext(ctx, "SELECT RetryCount FROM _System_IntegrationOutbound WHERE Status = 'pending'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []int
		for rows.Next() {
			var n int
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			out = append(out, n)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	deadLetters := func() int {
		t.Helper()
		dl, err := b.st.Outbound().DeadLetters(ctx, store.DeadLetterFilter{Key: "hubspot", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		return len(dl)
	}

	// A validation error, and the owed fields cannot be recorded: the
	// record goes back unspent.
	setFaults(hubspotsim.Faults{PartialFailure: 1})
	fl.fail.Store(true)
	wl.update(t, "contacts", id, map[string]any{"first_name": "Two"})
	if s, _ := w.RunOnce(ctx); s.Failed != 0 || s.Released != 1 {
		t.Fatalf("summary %+v; want the record given back, not dead-lettered, while the owed fields cannot be recorded", s)
	}
	if n := deadLetters(); n != 0 {
		t.Fatalf("%d dead letters; want 0", n)
	}
	if r := retries(); len(r) != 1 || r[0] != 0 {
		t.Fatalf("failed attempts of the pending events %v; want the change pending with none spent", r)
	}
	// Once they can be, it is dead-lettered with its fields owed.
	fl.fail.Store(false)
	b.clock.Advance(outbound.OweRetryDelay)
	b.drain(t, w)
	if n := deadLetters(); n != 1 {
		t.Fatalf("%d dead letters once the fields are recorded; want 1", n)
	}

	// The record's next write carries the dead letter's change.
	setFaults(hubspotsim.Faults{})
	wl.update(t, "contacts", id, map[string]any{"phone": "6"})
	b.drain(t, w)
	b.verify(t, "contacts")
}
