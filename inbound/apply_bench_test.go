package inbound

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// BenchmarkWorkerEdits measures the SyncWorker applying HubSpot edits to
// linked contacts through the records service: each op is one round of 100
// contacts edited in HubSpot, three properties each (HubSpot sends an event
// per property, with the edit's one occurredAt), delivered, then claimed and
// applied until the queue is empty. ApplyConcurrency is serve's: 1 on
// SQLite, the default elsewhere. The contacts were synced before: their
// creates' outbound events are done and their pushed states stored, so no
// write of theirs to HubSpot is open and an applied edit is not sent back.
//
//	go test ./inbound -run '^$' -bench BenchmarkWorkerEdits -benchtime 20x
func BenchmarkWorkerEdits(b *testing.B) {
	const contacts = 100
	props := []string{"firstname", "lastname", "phone"}
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setupDialect(b, d, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
			recs, err := records.New(bu.store, nil, records.Config{})
			if err != nil {
				b.Fatal(err)
			}
			ln := links.New(bu.store)
			ctx := context.Background()
			for i := range contacts {
				rec, err := recs.Insert(ctx, "contacts", map[string]any{"email": fmt.Sprintf("c%d@example.com", i)})
				if err != nil {
					b.Fatal(err)
				}
				if err := ln.Link(ctx, "hubspot", "contacts", rec.ID, fmt.Sprint(1+i)); err != nil {
					b.Fatal(err)
				}
			}
			settleOutbound(b, bu, ln, contacts)
			conc := 0
			if d == store.SQLite {
				conc = 1
			}
			w := bu.newWorker(b, &fakeReader{}, "w1", func(c *WorkerConfig) { c.Applier = recs; c.ApplyConcurrency = conc })
			start := bu.clock.Now()
			b.ResetTimer()
			for round := range b.N {
				b.StopTimer()
				at := start.Add(time.Duration(round) * time.Second).UnixMilli()
				var evs []hubspot.WebhookEvent
				for i := range contacts {
					for _, p := range props {
						evs = append(evs, whEvent("contact.propertyChange", int64(1+i), at, prop(p, fmt.Sprintf("%s %d", p, round))))
					}
				}
				for from := 0; from < len(evs); from += 100 { // HubSpot's most per delivery
					bu.deliverEvents(b, evs[from:min(from+100, len(evs))]...)
				}
				bu.clock.Advance(time.Second)
				b.StartTimer()
				if n := drain(b, w); n != len(evs) {
					b.Fatalf("round %d: %d events claimed, want %d", round, n, len(evs))
				}
			}
			b.ReportMetric(float64(b.N*contacts*len(props))/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// settleOutbound completes the store's outbound events and records each one's
// write as pushed to its link, as an outbound worker would have.
func settleOutbound(b *testing.B, bu *bundle, ln *links.Links, limit int) {
	b.Helper()
	ctx := context.Background()
	evs, err := bu.store.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot", Limit: limit, MaxPerRecord: 1, Owner: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	var states []links.Pushed
	for _, ev := range evs {
		snap, err := outbox.ParseSnapshot(ev.Payload)
		if err != nil {
			b.Fatal(err)
		}
		ext, _, err := ln.Lookup(ctx, "hubspot", ev.ObjectType, ev.RecordID)
		if err != nil {
			b.Fatal(err)
		}
		states = append(states, links.Pushed{RecordID: ev.RecordID, ExternalID: ext, Version: snap.Version, Fields: snap.Fields, Seq: ev.Seq, EventDate: ev.CreatedDate})
		if err := bu.store.Outbound().Complete(ctx, ev.Lease()); err != nil {
			b.Fatal(err)
		}
	}
	if len(evs) != limit {
		b.Fatalf("settled %d outbound events, want %d", len(evs), limit)
	}
	if err := ln.PushedMany(ctx, "hubspot", "contacts", states); err != nil {
		b.Fatal(err)
	}
}
