package server

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/relay"
	"github.com/hubsync/hubsync/store"
)

// lifecycle is what every background service of hubsync offers.
type lifecycle interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Every service (the inbound and outbound workers, the relay, the cleaner and
// the Server) has one lifecycle with the same errors: a second Start returns
// ErrStarted, Stop is idempotent, a Start after Stop returns ErrStopped, and
// the sentinels are the same values in every package.
func TestEveryServiceHasTheSameLifecycle(t *testing.T) {
	dbtest.Each(t, testEveryServiceHasTheSameLifecycle)
}

func testEveryServiceHasTheSameLifecycle(t *testing.T, d store.Dialect) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	db := dbtest.Migrated(t, d)
	h, err := hubsync.Open(ctx, db.URL, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	st := h.Store
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: "http://127.0.0.1:1", AccessToken: "unused"})
	if err != nil {
		t.Fatal(err)
	}
	bud, err := budget.NewMemory(budget.Config{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	lk := links.New(st)
	recs, err := records.New(st, lk, records.Config{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}

	builders := []struct {
		name    string
		new     func(t *testing.T) lifecycle
		started error // the package's own sentinels
		stopped error
	}{
		{"inbound.Worker", func(t *testing.T) lifecycle {
			w, err := inbound.NewWorker(inbound.WorkerConfig{Store: st.Inbound(), Applier: recs, HubSpot: client, Logger: quiet, PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, inbound.ErrStarted, inbound.ErrStopped},
		{"outbound.Worker", func(t *testing.T) lifecycle {
			w, err := outbound.NewWorker(outbound.Config{Store: st.Outbound(), HubSpot: client, Links: lk, Budget: bud, Logger: quiet, PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return w
		}, outbound.ErrStarted, outbound.ErrStopped},
		{"relay.Relay", func(t *testing.T) lifecycle {
			r, err := relay.New(st, relay.NewBus(), relay.Config{Logger: quiet, PollInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			return r
		}, relay.ErrStarted, relay.ErrStopped},
		{"cleaner", func(t *testing.T) lifecycle {
			return &cleaner{st: st, interval: time.Hour, log: quiet}
		}, ErrStarted, ErrStopped},
		{"server.Server", func(t *testing.T) lifecycle {
			srv, err := New(Config{
				DatabaseURL: dbtest.Migrated(t, d).URL, Addr: "127.0.0.1:0", Logger: quiet,
				DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			return srv
		}, ErrStarted, ErrStopped},
	}
	for _, b := range builders {
		t.Run(b.name, func(t *testing.T) {
			if b.started != ErrStarted || b.stopped != ErrStopped {
				t.Fatalf("the package's sentinels are not the shared ones: %v, %v", b.started, b.stopped)
			}
			s := b.new(t)
			if err := s.Start(ctx); err != nil {
				t.Fatalf("Start = %v", err)
			}
			if err := s.Start(ctx); !errors.Is(err, b.started) {
				t.Fatalf("second Start = %v, want ErrStarted", err)
			}
			for i := range 2 {
				if err := s.Stop(ctx); err != nil {
					t.Fatalf("Stop #%d = %v, want nil", i+1, err)
				}
			}
			if err := s.Start(ctx); !errors.Is(err, b.stopped) {
				t.Fatalf("Start after Stop = %v, want ErrStopped", err)
			}

			// Stop before Start: nil, idempotent, and the service can no longer start.
			s = b.new(t)
			for i := range 2 {
				if err := s.Stop(ctx); err != nil {
					t.Fatalf("Stop #%d before Start = %v, want nil", i+1, err)
				}
			}
			if err := s.Start(ctx); !errors.Is(err, b.stopped) {
				t.Fatalf("Start after a Stop before Start = %v, want ErrStopped", err)
			}
		})
	}
}
