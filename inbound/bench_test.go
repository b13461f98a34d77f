package inbound

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

var deliverySeq atomic.Int64

// deliveryBody returns a delivery of n distinct propertyChange events, as
// HubSpot sends them (about 330 bytes an event).
func deliveryBody(tb testing.TB, n int) []byte {
	tb.Helper()
	evs := make([]hubspot.WebhookEvent, n)
	base := deliverySeq.Add(int64(n))
	for i := range evs {
		id := base + int64(i)
		evs[i] = hubspot.WebhookEvent{
			EventID: id, SubscriptionID: 4242, PortalID: 62515, AppID: 1000, OccurredAt: t0 + id,
			SubscriptionType: "contact.propertyChange", ObjectID: 1 + id%5000, PropertyName: "firstname",
			PropertyValue: "Name " + strconv.FormatInt(id, 10), ChangeSource: "CRM_UI", SourceID: "userId:7",
		}
	}
	body, err := json.Marshal(evs)
	if err != nil {
		tb.Fatal(err)
	}
	return body
}

// BenchmarkReceiver measures one 100-event delivery end to end through the
// handler: signature check, parse, and the one-transaction insert.
//
//	go test ./inbound -run '^$' -bench BenchmarkReceiver -benchtime 200x
func BenchmarkReceiver(b *testing.B) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		b.Run(string(d), func(b *testing.B) {
			bb := setupDialect(b, d, store.RetryPolicy{})
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = deliveryBody(b, 100)
			}
			b.SetBytes(int64(len(bodies[0])))
			b.ResetTimer()
			for i := range b.N {
				rec := httptest.NewRecorder()
				bb.receiver.ServeHTTP(rec, signedRequest(b, bodies[i], bb.clock.Now()))
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "events/s")
		})
	}
	b.Run("parse_only", func(b *testing.B) {
		body := deliveryBody(b, 100)
		b.SetBytes(int64(len(body)))
		for range b.N {
			if _, err := ParseEvents(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestReceiverLoad measures delivery latency with 50 concurrent senders of
// 100-event deliveries over real HTTP, on SQLite and PostgreSQL. It is a
// measurement, not an assertion on time, and runs only when asked:
//
//	HUBSYNC_RECEIVER_LOAD=1 go test ./inbound -run TestReceiverLoad -v
//
// On SQLite the receiver runs with MaxConcurrentStores 1, as recommended;
// HUBSYNC_RECEIVER_LOAD_UNBOUNDED=1 measures it without the bound.
// HUBSYNC_RECEIVER_LOAD_DELIVERIES sets the deliveries per sender (default 10);
// HUBSYNC_RECEIVER_LOAD_NO_GROUP=1 writes each delivery in its own transaction
// (no group commit), for comparison; HUBSYNC_RECEIVER_LOAD_MYSQL=1 measures
// MySQL/MariaDB too, after the other two.
func TestReceiverLoad(t *testing.T) {
	if os.Getenv("HUBSYNC_RECEIVER_LOAD") == "" {
		t.Skip("set HUBSYNC_RECEIVER_LOAD=1 to measure")
	}
	perSender := 10
	if v, err := strconv.Atoi(os.Getenv("HUBSYNC_RECEIVER_LOAD_DELIVERIES")); err == nil && v > 0 {
		perSender = v
	}
	const senders, events = 50, 100
	loadStart := time.Now()
	dialects := []store.Dialect{store.SQLite, store.Postgres}
	if os.Getenv("HUBSYNC_RECEIVER_LOAD_MYSQL") != "" {
		dialects = append(dialects, store.MySQL)
	}
	for _, d := range dialects {
		t.Run(string(d), func(t *testing.T) {
			db := dbtest.Migrated(t, d)
			st := openStore(t, d, db.DB, store.Config{})
			// The receiver's clock is just after deliveryBody's events, so none
			// is refused as from the future.
			now := func() time.Time { return time.UnixMilli(t0 + 1e9).Add(time.Since(loadStart)) }
			cfg := ReceiverConfig{Store: st.Inbound(), ClientSecret: testSecret, Now: now}
			if d == store.SQLite && os.Getenv("HUBSYNC_RECEIVER_LOAD_UNBOUNDED") == "" {
				cfg.MaxConcurrentStores = 1
			}
			if v, err := strconv.Atoi(os.Getenv("HUBSYNC_RECEIVER_LOAD_SLOTS")); err == nil && v > 0 && d != store.SQLite {
				cfg.MaxConcurrentStores = v // commit slots to compare with the default
			}
			if v, err := strconv.Atoi(os.Getenv("HUBSYNC_RECEIVER_LOAD_GROUP_EVENTS")); err == nil && v > 0 {
				cfg.GroupCommitEvents = v // the group commit's cap to compare with the default
			}
			if os.Getenv("HUBSYNC_RECEIVER_LOAD_NO_GROUP") != "" {
				cfg.GroupCommitEvents = -1 // each delivery in its own transaction, as before group commit
			}
			rc, err := NewReceiver(cfg)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: senders}}
			defer client.CloseIdleConnections()
			url := srv.URL + WebhookPath

			bodies := make([][][]byte, senders)
			for s := range bodies {
				for range perSender {
					bodies[s] = append(bodies[s], deliveryBody(t, events))
				}
			}
			var mu sync.Mutex
			var lat []time.Duration
			var failures atomic.Int64
			start := time.Now()
			var wg sync.WaitGroup
			for s := range senders {
				wg.Go(func() {
					for _, body := range bodies[s] {
						ts := now().UnixMilli()
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(testSecret, http.MethodPost, url, body, ts))
						req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(ts, 10))
						began := time.Now()
						resp, err := client.Do(req)
						el := time.Since(began)
						if err != nil || resp.StatusCode != http.StatusOK {
							failures.Add(1)
						}
						if resp != nil {
							resp.Body.Close()
						}
						mu.Lock()
						lat = append(lat, el)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			wall := time.Since(start)
			if f := failures.Load(); f > 0 {
				t.Fatalf("%d deliveries failed", f)
			}
			var n int
			if err := db.DB.QueryRow("SELECT COUNT(*) FROM _System_IntegrationInbound").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != senders*perSender*events {
				t.Fatalf("%d rows stored, want %d", n, senders*perSender*events)
			}
			slices.Sort(lat)
			pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
			t.Logf("%s: %d senders × %d deliveries × %d events on %d CPUs (%s): p50 %s  p90 %s  p99 %s  max %s; %.0f events/s",
				d, senders, perSender, events, runtime.NumCPU(), runtime.GOARCH,
				pct(0.50).Round(time.Millisecond), pct(0.90).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
				lat[len(lat)-1].Round(time.Millisecond), float64(n)/wall.Seconds())
			fmt.Fprintf(os.Stderr, "| %s | %d | %s | %s | %s | %s | %.0f |\n", d, len(lat),
				pct(0.50).Round(time.Millisecond), pct(0.90).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
				lat[len(lat)-1].Round(time.Millisecond), float64(n)/wall.Seconds())
		})
	}
}
