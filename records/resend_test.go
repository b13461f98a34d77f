package records

import (
	"context"
	"errors"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// Resend enqueues one outbound update per destination carrying the record
// as it is, with the destination's values as its "before" state, and leaves
// the record (version, fields) and the internal queue alone.
func TestResend(t *testing.T) { dbtest.Each(t, testResend) }

func testResend(t *testing.T, d store.Dialect) {
	b := setup(t, d, Config{})
	ctx := context.Background()
	rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": "a@example.com", "first_name": "Ada", "phone": "1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.svc.Resend(ctx, "contacts", rec.ID, map[string]any{"first_name": "Grace", "phone": nil})
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 {
		t.Fatalf("Resend moved the version to %d", got.Version)
	}
	evs := b.outbound(t, rec.ID)
	if len(evs) != 2 {
		t.Fatalf("%d outbound events; want the create and the resend", len(evs))
	}
	r := evs[1]
	if r.EventType != store.EventUpdate || r.Destination != "hubspot" || r.Payload.Version != 1 || r.Payload.Fields["first_name"] != "Ada" {
		t.Fatalf("resend = %+v %+v", r, r.Payload)
	}
	if r.Old == nil || r.Old.Fields["first_name"] != "Grace" || r.Old.Fields["email"] != "a@example.com" {
		t.Fatalf("before state = %+v; want HubSpot's first_name over the record", r.Old)
	}
	if _, has := r.Old.Fields["phone"]; has {
		t.Fatalf("a field HubSpot lacks is in the before state: %+v", r.Old.Fields)
	}
	var internal int
	if err := b.st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM _System_OutboxEvent").Scan(&internal); err != nil || internal != 1 {
		t.Fatalf("%d internal events (%v); a resend is no local change", internal, err)
	}
	// Whole record (nil): no before state.
	if _, err := b.svc.Resend(ctx, "contacts", rec.ID, nil); err != nil {
		t.Fatal(err)
	}
	if evs := b.outbound(t, rec.ID); len(evs) != 3 || evs[2].Old != nil {
		t.Fatalf("a whole resend = %+v", evs[len(evs)-1])
	}
	if _, err := b.svc.Resend(ctx, "contacts", "missing", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Resend of a missing record = %v", err)
	}
}
