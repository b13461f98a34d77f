package records

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestRestoreContinuesVersion: a client reads a record at version 1; the
// HubSpot object is deleted and restored (with other values), which deletes
// and recreates the local record. The recreated record continues its
// versions, so the client's PATCH at the version it read before the
// deletion is a version conflict; before, the record was at version 1
// again and the PATCH overwrote restored values the client never saw.
func TestRestoreContinuesVersion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		t0 := b.clock.Now().Add(time.Hour)

		created := mustApply(t, b, change(store.EventCreate, "42", t0, map[string]any{"email": "ann@example.com", "first_name": "Ann"}))
		read, err := b.svc.Get(ctx, "contacts", created.RecordID)
		if err != nil {
			t.Fatal(err)
		}
		mustApply(t, b, change(store.EventDelete, "42", t0.Add(10*time.Second), nil))
		mustApply(t, b, change(store.EventRestore, "42", t0.Add(20*time.Second), map[string]any{"email": "ann@example.com", "first_name": "Bea"}))
		restored, err := b.svc.Get(ctx, "contacts", created.RecordID)
		if err != nil {
			t.Fatal(err)
		}
		if restored.Version <= read.Version+1 {
			t.Errorf("restored record at version %d; want past %d (read at %d, deleted at %d)", restored.Version, read.Version+1, read.Version, read.Version+1)
		}

		_, err = b.svc.Update(ctx, "contacts", created.RecordID, read.Version, map[string]any{"last_name": "Stale"})
		if !errors.Is(err, ErrConflict) {
			t.Errorf("PATCH at version %d read before the deletion: err = %v; want ErrConflict (the record was deleted and restored since)", read.Version, err)
		}
	})
}
