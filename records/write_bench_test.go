package records

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// contactFields are the six fields of a default-mapping contact.
func contactFields(i int) map[string]any {
	return map[string]any{
		"email": fmt.Sprintf("c%d@example.com", i), "first_name": "Ann", "last_name": fmt.Sprintf("Lee %d", i),
		"phone": "555-0100", "company": "Acme", "lifecycle_stage": "lead",
	}
}

// contactCreation is HubSpot's creation of contact ext with contactFields(i),
// matched by its email, as the SyncWorker applies it.
func contactCreation(ext string, i int, at time.Time) apply.Change {
	f := contactFields(i)
	ch := change(store.EventCreate, ext, at, f)
	ch.MatchField, ch.MatchValue = "email", f["email"].(string)
	return ch
}

// BenchmarkInsert measures the CRM's own write of a new contact with the six
// fields of the default mapping: the record, its field clocks, its internal
// event and its outbound event, in one transaction.
//
//	go test ./records -run '^$' -bench 'BenchmarkInsert$' -benchtime 1000x
func BenchmarkInsert(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setup(b, d, Config{})
			ctx := context.Background()
			b.ResetTimer()
			for i := range b.N {
				if _, err := bu.svc.Insert(ctx, "contacts", contactFields(i)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyCreation measures the SyncWorker's apply of a HubSpot contact
// creation with the six fields of the default mapping, matched by email to
// no local record: a new record, its link and its field clocks.
//
//	go test ./records -run '^$' -bench ApplyCreation -benchtime 1000x
func BenchmarkApplyCreation(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setup(b, d, Config{})
			ctx := outbox.WithSyncSource(context.Background(), "hubspot")
			at := bu.clock.Now().Add(time.Hour)
			b.ResetTimer()
			for i := range b.N {
				if _, err := bu.svc.Apply(ctx, contactCreation(fmt.Sprint(800_000_000+i), i, at)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyPropertyChange measures the SyncWorker's apply of a HubSpot
// property change (one field) to a linked contact, each a later change of
// the same contact than the one before.
//
//	go test ./records -run '^$' -bench ApplyPropertyChange -benchtime 1000x
func BenchmarkApplyPropertyChange(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setup(b, d, Config{})
			ctx := outbox.WithSyncSource(context.Background(), "hubspot")
			at := bu.clock.Now().Add(time.Hour)
			if _, err := bu.svc.Apply(ctx, contactCreation("700000000", 0, at)); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				ch := change(store.EventUpdate, "700000000", at.Add(time.Duration(i+1)*time.Millisecond), map[string]any{"phone": fmt.Sprintf("555-%04d", i)})
				ch.Partial = true
				if _, err := bu.svc.Apply(ctx, ch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyDeletion measures the SyncWorker's apply of a HubSpot
// contact deletion of a linked contact with nothing queued: the record's
// deletion, its tombstone, its clocks, its internal event, and the look for
// its dead letters that the deletion makes moot (none here).
//
//	go test ./records -run '^$' -bench ApplyDeletion -benchtime 1000x
func BenchmarkApplyDeletion(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setup(b, d, Config{})
			ctx := outbox.WithSyncSource(context.Background(), "hubspot")
			at := bu.clock.Now().Add(time.Hour)
			for i := range b.N {
				if _, err := bu.svc.Apply(ctx, contactCreation(fmt.Sprint(600_000_000+i), i, at)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				res, err := bu.svc.Apply(ctx, change(store.EventDelete, fmt.Sprint(600_000_000+i), at.Add(time.Second), nil))
				if err != nil {
					b.Fatal(err)
				}
				if res.Outcome != apply.Deleted {
					b.Fatalf("deletion %d: %+v; want the record deleted", i, res)
				}
			}
		})
	}
}
