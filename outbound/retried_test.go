package outbound_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// errAnswerLost stands for a cycle that dies (or loses HubSpot's answer)
// after HubSpot applied its write and before the worker recorded it.
var errAnswerLost = errors.New("test: the answer was lost after HubSpot applied the write")

// loseFirstAnswer returns a worker whose first write call reaches HubSpot
// and then fails, so nothing of it (link, pushed state, completion) is
// recorded; later calls go through.
func loseFirstAnswer(t *testing.T, b *bundle) *outbound.Worker {
	t.Helper()
	var calls atomic.Int32
	lossy := newCounting(b.client)
	lossy.after = func(context.Context) error {
		if calls.Add(1) == 1 {
			return errAnswerLost
		}
		return nil
	}
	return b.worker(t, func(c *outbound.Config) { c.HubSpot = lossy })
}

// TestRetryAfterUnrecordedWrite: a write that reached HubSpot without being
// recorded leaves the worker's knowledge of HubSpot's state stale. The retry
// must not plan against it: a field set back to its last recorded value is
// sent (HubSpot holds the unrecorded newer one), and a retried create clears a
// field removed since (the first attempt may have created the object with it).
func TestRetryAfterUnrecordedWrite(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		t.Run("value back to the recorded push", func(t *testing.T) {
			b := setup(t, options{dialect: d})
			wl := newWorkload(b, 1)
			id := wl.insert(t, "contacts", map[string]any{"email": "back@example.com", "first_name": "One"})
			b.drain(t, b.worker(t, nil)) // recorded: first_name One

			w := loseFirstAnswer(t, b)
			wl.update(t, "contacts", id, map[string]any{"first_name": "Two"})
			if s, _ := w.RunOnce(context.Background()); s.Retried != 1 {
				t.Fatalf("first attempt = %+v; want its event retried", s)
			}
			if got := b.hubspotProp(t, "contacts", id, "firstname"); got != "Two" {
				t.Fatalf("HubSpot firstname %q after the lost answer; want Two (the write reached HubSpot)", got)
			}
			wl.update(t, "contacts", id, map[string]any{"first_name": "One"})
			b.drain(t, w)
			if got := b.hubspotProp(t, "contacts", id, "firstname"); got != "One" {
				t.Fatalf("HubSpot firstname %q; want One (the retry skipped a value equal to the recorded push)", got)
			}
			b.verify(t, "contacts")
		})
		t.Run("retried create clears a removed field", func(t *testing.T) {
			b := setup(t, options{dialect: d})
			wl := newWorkload(b, 2)
			w := loseFirstAnswer(t, b)
			id := wl.insert(t, "contacts", map[string]any{"email": "clear@example.com", "first_name": "C", "phone": "555"})
			if s, _ := w.RunOnce(context.Background()); s.Retried != 1 {
				t.Fatalf("first attempt = %+v; want its event retried", s)
			}
			if n := len(b.sim.Objects("contacts")); n != 1 {
				t.Fatalf("HubSpot has %d contacts after the lost answer; want 1", n)
			}
			wl.update(t, "contacts", id, map[string]any{"phone": nil})
			b.drain(t, w)
			if got := b.hubspotProp(t, "contacts", id, "phone"); got != "" {
				t.Fatalf("HubSpot phone %q; want it cleared (removed locally after the unrecorded create)", got)
			}
			b.verify(t, "contacts")
		})
		t.Run("retried create after its email changed", func(t *testing.T) {
			// The lost create reached HubSpot under the old email; an upsert
			// by the new one alone would create a second contact. The record
			// retried beside it, whose email did not change, is upserted.
			b := setup(t, options{dialect: d})
			wl := newWorkload(b, 3)
			w := loseFirstAnswer(t, b)
			moved := wl.insert(t, "contacts", map[string]any{"email": "old@example.com", "first_name": "Ann"})
			stays := wl.insert(t, "contacts", map[string]any{"email": "stays@example.com", "first_name": "Bea"})
			if s, _ := w.RunOnce(context.Background()); s.Retried != 2 {
				t.Fatalf("first attempt = %+v; want both records retried", s)
			}
			wl.update(t, "contacts", moved, map[string]any{"email": "new@example.com"})
			b.drain(t, w)
			if n := len(b.sim.Objects("contacts")); n != 2 {
				t.Fatalf("2 local contacts are %d HubSpot contacts after the retry", n)
			}
			for id, want := range map[string]string{moved: "new@example.com", stays: "stays@example.com"} {
				if got := b.hubspotProp(t, "contacts", id, "email"); got != want {
					t.Fatalf("HubSpot email %q; want %s", got, want)
				}
			}
			b.verify(t, "contacts")
		})
	})
}

// hubspotProp is a HubSpot property of the object a local record is linked
// to; "" when unset.
func (b *bundle) hubspotProp(t *testing.T, objectType, recordID, prop string) string {
	t.Helper()
	obj, _ := b.mapping.Lookup(objectType)
	ext, ok, err := b.links.Lookup(context.Background(), "hubspot", objectType, recordID)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		// Not linked yet (a lost create): find it by email.
		for _, o := range b.sim.Objects(obj.HubSpotType) {
			if o.Properties["email"] != "" {
				ext = o.ID
			}
		}
	}
	o, ok := b.sim.Object(obj.HubSpotType, ext)
	if !ok {
		t.Fatalf("%s/%s: no HubSpot object %q", objectType, recordID, ext)
	}
	return o.Properties[prop]
}
