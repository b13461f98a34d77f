package outbound_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/outbound"
)

// callSizes is a HubSpot that records the inputs of each write call by kind.
type callSizes struct {
	outbound.HubSpot
	mu    sync.Mutex
	sizes map[string][]int
}

func (c *callSizes) add(kind string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sizes[kind] = append(c.sizes[kind], n)
}

func (c *callSizes) BatchCreate(ctx context.Context, t hubspot.ObjectType, in []hubspot.CreateInput) (*hubspot.BatchResult, error) {
	c.add(string(t)+" create", len(in))
	return c.HubSpot.BatchCreate(ctx, t, in)
}

func (c *callSizes) BatchUpdate(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpdateInput) (*hubspot.BatchResult, error) {
	c.add(string(t)+" update", len(in))
	return c.HubSpot.BatchUpdate(ctx, t, in)
}

func (c *callSizes) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	c.add(string(t)+" upsert", len(in))
	return c.HubSpot.BatchUpsert(ctx, t, in)
}

func (c *callSizes) BatchArchive(ctx context.Context, t hubspot.ObjectType, ids []string) error {
	c.add(string(t)+" archive", len(ids))
	return c.HubSpot.BatchArchive(ctx, t, ids)
}

// TestMixedBacklogFillsCalls: a backlog interleaving contact updates, company
// deletions and contact creations makes, in one cycle with filling, one full
// call (100 records) per operation, and stops claiming once each is full;
// without filling, the first claim of 100 events splits into three calls of
// about a third each.
func TestMixedBacklogFillsCalls(t *testing.T) {
	t.Parallel()
	for _, fill := range []bool{true, false} {
		t.Run(fmt.Sprintf("fill=%v", fill), func(t *testing.T) {
			t.Parallel()
			b := setup(t, options{})
			wl := newWorkload(b, 9)
			var contacts, companies []string
			for i := range 120 {
				contacts = append(contacts, wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("c%d@example.com", i), "first_name": "C"}))
				if i < 110 {
					companies = append(companies, wl.insert(t, "companies", map[string]any{"name": fmt.Sprint("Co", i)}))
				}
			}
			b.drain(t, b.worker(t, nil))
			for i := range 120 {
				wl.update(t, "contacts", contacts[i], map[string]any{"first_name": fmt.Sprint("D", i)})
				if i < 110 {
					wl.delete(t, "companies", companies[i])
				}
				if i < 105 {
					wl.insert(t, "contacts", map[string]any{"email": fmt.Sprintf("n%d@example.com", i), "first_name": "N"})
				}
			}
			hs := &callSizes{HubSpot: b.client, sizes: map[string][]int{}}
			w := b.worker(t, func(c *outbound.Config) {
				c.HubSpot = hs
				c.BatchSize = 100
				if !fill {
					c.FillWait = -1
				}
			})
			s, err := w.RunOnce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for kind, sizes := range hs.sizes {
				slices.Sort(sizes)
				t.Logf("%s: %v", kind, sizes)
			}
			want := map[string][]int{"contacts update": {100}, "companies archive": {100}, "contacts upsert": {100}}
			if fill {
				if s.Claimed != 300 || len(hs.sizes) != len(want) {
					t.Fatalf("claimed %d events, calls %v; want 300 in calls %v", s.Claimed, hs.sizes, want)
				}
				for kind, sizes := range want {
					if !slices.Equal(hs.sizes[kind], sizes) {
						t.Errorf("%s calls of %v records; want %v", kind, hs.sizes[kind], sizes)
					}
				}
			} else {
				for kind, sizes := range hs.sizes {
					if slices.Max(sizes) >= 100 {
						t.Errorf("without filling, %s made a call of %d records from one claim of 100 mixed events", kind, slices.Max(sizes))
					}
				}
				if s.Claimed != 100 {
					t.Fatalf("without filling, claimed %d events; want one claim of 100", s.Claimed)
				}
			}
			b.drain(t, b.worker(t, nil))
			b.verify(t, "contacts")
			b.verify(t, "companies")
		})
	}
}
