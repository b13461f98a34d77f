package outbound_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// failFirstUpserts fails its first n batch upserts with a 503 before they
// reach HubSpot, so that the record's events are retried.
type failFirstUpserts struct {
	outbound.HubSpot
	n atomic.Int32
}

func (h *failFirstUpserts) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	if h.n.Add(-1) >= 0 {
		return nil, &hubspot.Error{Method: "POST", Path: "/crm/v3/objects/contacts/batch/upsert", StatusCode: 503,
			Kind: hubspot.KindRetryable, Message: "The service is temporarily unavailable."}
	}
	return h.HubSpot.BatchUpsert(ctx, t, in)
}

// TestResolveReadFindsNothing: a resolve read (resolve_upsert,
// resolve_archive) that finds nothing, which HubSpot (and the simulator)
// answer with a plain 404, means nothing to adopt or to archive: the record
// is upserted by its latest email, or its deletion completes, instead of
// being split call by call and dead-lettered.
func TestResolveReadFindsNothing(t *testing.T) {
	t.Run("resolve_upsert", func(t *testing.T) {
		b := setup(t, options{})
		wl := newWorkload(b, 1)
		h := &failFirstUpserts{HubSpot: b.client}
		h.n.Store(1)
		w := b.worker(t, func(c *outbound.Config) { c.HubSpot = h })
		id := wl.insert(t, "contacts", map[string]any{"email": "first@example.com", "first_name": "A"})
		if s, _ := w.RunOnce(context.Background()); s.Retried != 1 {
			t.Fatalf("first attempt = %+v; want its event retried", s)
		}
		// The email changes while the first attempt's event waits for its retry.
		wl.update(t, "contacts", id, map[string]any{"email": "second@example.com"})
		b.drain(t, w)
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Errorf("%d events dead-lettered; want 0 (the read found no object under the earlier email: upsert by the latest)", n)
		}
		b.verify(t, "contacts")
	})
	t.Run("resolve_archive", func(t *testing.T) {
		b := setup(t, options{})
		wl := newWorkload(b, 2)
		h := &failFirstUpserts{HubSpot: b.client}
		h.n.Store(1)
		w := b.worker(t, func(c *outbound.Config) { c.HubSpot = h })
		id := wl.insert(t, "contacts", map[string]any{"email": "gone@example.com", "first_name": "G"})
		if s, _ := w.RunOnce(context.Background()); s.Retried != 1 {
			t.Fatalf("first attempt = %+v; want its event retried", s)
		}
		wl.delete(t, "contacts", id)
		b.drain(t, w)
		if n := b.counts(t)[store.StatusFailed]; n != 0 {
			t.Errorf("%d events dead-lettered; want 0 (nothing in HubSpot to archive)", n)
		}
		b.verify(t, "contacts")
	})
}

// TestRefusedOwedFieldDoesNotBlockLaterWrites: a change HubSpot refuses for good
// (a contact's email that another HubSpot contact holds) is dead-lettered
// and its field owed; every later write of the record carries the owed
// field with its latest value. While that value is still refused, an
// unrelated later change (first_name) must still reach HubSpot: the write is
// made again without the owed field, which stays owed.
func TestRefusedOwedFieldDoesNotBlockLaterWrites(t *testing.T) {
	b := setup(t, options{sharedEmails: true})
	wl := newWorkload(b, 3)
	w := b.worker(t, nil)
	a := wl.insert(t, "contacts", map[string]any{"email": "a@example.com", "first_name": "A"})
	wl.insert(t, "contacts", map[string]any{"email": "b@example.com", "first_name": "B"})
	b.drain(t, w)

	wl.update(t, "contacts", a, map[string]any{"email": "b@example.com"}) // refused: b@ is another contact's
	b.drain(t, w)
	failedBefore := b.counts(t)[store.StatusFailed]
	if failedBefore != 1 {
		t.Fatalf("%d dead letters after the refused email change; want 1", failedBefore)
	}

	wl.update(t, "contacts", a, map[string]any{"first_name": "Zed"}) // an unrelated change
	b.drain(t, w)
	if got := b.hubspotProp(t, "contacts", a, "firstname"); got != "Zed" {
		t.Errorf("HubSpot firstname %q; want Zed (the first_name change was dead-lettered along with the owed email: %d dead letters)",
			got, b.counts(t)[store.StatusFailed])
	}
	if n := b.counts(t)[store.StatusFailed]; n != failedBefore {
		t.Errorf("%d dead letters after the unrelated change; want still %d", n, failedBefore)
	}
	owed, err := b.links.LookupOwedMany(context.Background(), "hubspot", "contacts", []string{a})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(owed[a], []string{"email"}) {
		t.Errorf("owed fields of the record after the write without them = %v; want [email] still owed", owed[a])
	}
	if got := b.hubspotProp(t, "contacts", a, "email"); got != "a@example.com" {
		t.Errorf("HubSpot email %q; want a@example.com (b@ is another contact's)", got)
	}
}

// unknownCategoryOnce answers its first batch update with a 207 whose one
// error, for every input, has a category this client does not know.
type unknownCategoryOnce struct {
	outbound.HubSpot
	done atomic.Bool
}

func (h *unknownCategoryOnce) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	if h.done.CompareAndSwap(false, true) {
		res := &hubspot.BatchResult{Status: "COMPLETE", Multi: true, NumErrors: len(in)}
		for _, x := range in {
			res.Errors = append(res.Errors, hubspot.BatchError{Status: "error", Category: "SOMETHING_NEW", Message: "a category HubSpot added later",
				Context: map[string][]string{"objectWriteTraceId": {x.ObjectWriteTraceID}}, ObjectWriteTraceID: x.ObjectWriteTraceID})
		}
		return res, nil
	}
	return h.HubSpot.BatchUpdate(ctx, t, in)
}

// TestUnknownErrorCategoryRetries: a per-input error of a category the
// client does not know is unexplained, so the record is retried (and
// dead-lettered only after MaxAttempts), not dead-lettered at once.
func TestUnknownErrorCategoryRetries(t *testing.T) {
	b := setup(t, options{})
	wl := newWorkload(b, 4)
	h := &unknownCategoryOnce{HubSpot: b.client}
	w := b.worker(t, func(c *outbound.Config) { c.HubSpot = h })
	id := wl.insert(t, "contacts", map[string]any{"email": "u@example.com", "first_name": "U"})
	b.drain(t, w)
	wl.update(t, "contacts", id, map[string]any{"first_name": "V"})
	if s, _ := w.RunOnce(context.Background()); s.Retried != 1 || s.Failed != 0 {
		t.Fatalf("cycle answered with an unknown error category = %+v; want the record retried, not failed", s)
	}
	b.drain(t, w)
	if n := b.counts(t)[store.StatusFailed]; n != 0 {
		t.Errorf("%d dead letters; want 0", n)
	}
	b.verify(t, "contacts")
}
