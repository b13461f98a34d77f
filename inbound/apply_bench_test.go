package inbound

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// BenchmarkWorkerEdits measures the SyncWorker applying HubSpot edits to
// linked contacts through the records service: each op is one round of 100
// contacts edited in HubSpot, three properties each (HubSpot sends an event
// per property, with the edit's one occurredAt), delivered, then claimed and
// applied until the queue is empty. ApplyConcurrency is serve's: 1 on
// SQLite, the default elsewhere.
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
