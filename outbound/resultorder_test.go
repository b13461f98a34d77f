package outbound_test

import (
	"context"
	"slices"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
)

// reversing answers every batch write with its results in reverse order:
// HubSpot does not promise result order (hubspot.BatchResult), and the
// simulator keeps the inputs' order.
type reversing struct{ outbound.HubSpot }

func (r reversing) BatchCreate(ctx context.Context, t hubspot.ObjectType, in []hubspot.CreateInput) (*hubspot.BatchResult, error) {
	return reversed(r.HubSpot.BatchCreate(ctx, t, in))
}

func (r reversing) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	return reversed(r.HubSpot.BatchUpdate(ctx, t, in))
}

func (r reversing) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	return reversed(r.HubSpot.BatchUpsert(ctx, t, in))
}

func reversed(res *hubspot.BatchResult, err error) (*hubspot.BatchResult, error) {
	if res != nil {
		slices.Reverse(res.Results)
	}
	return res, err
}

// TestResultOrder: records of one batch call are linked to their own objects
// whatever order HubSpot lists the results in. Contacts without an email are
// created (no upsert key), and HubSpot seldom echoes their trace ids, so the
// worker tells their objects apart by properties, here one record's a subset
// of another's; the others are upserted by email, then updated by id.
func TestResultOrder(t *testing.T) {
	b := setup(t, options{})
	wl := newWorkload(b, 1)
	ids := []string{
		wl.insert(t, "contacts", map[string]any{"first_name": "Bob"}),
		wl.insert(t, "contacts", map[string]any{"first_name": "Bob", "last_name": "Smith"}),
		wl.insert(t, "contacts", map[string]any{"first_name": "Bob", "last_name": "Smith", "phone": "1"}),
		wl.insert(t, "contacts", map[string]any{"email": "a@example.com", "first_name": "Ann"}),
		wl.insert(t, "contacts", map[string]any{"email": "b@example.com", "first_name": "Ann"}),
	}
	w := b.worker(t, func(c *outbound.Config) { c.HubSpot = reversing{b.client} })
	b.drain(t, w)
	if live := b.sim.Objects("contacts"); len(live) != len(ids) {
		t.Errorf("%d local contacts became %d HubSpot contacts", len(ids), len(live))
	}
	b.verify(t, "contacts")
	for i, id := range ids {
		wl.update(t, "contacts", id, map[string]any{"phone": string(rune('a' + i))})
	}
	b.drain(t, w)
	if live := b.sim.Objects("contacts"); len(live) != len(ids) {
		t.Errorf("after updates: %d HubSpot contacts, want %d", len(live), len(ids))
	}
	b.verify(t, "contacts")
}
