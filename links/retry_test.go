package links_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// TestWritesRunAgainAfterADeadlock: a links transaction the database rolled
// back as a deadlock runs again. The outbound worker records what HubSpot
// accepted with LinkMany and PushedMany; before they were retried, MariaDB's
// deadlocks between concurrent cycles cost the records another HubSpot write
// ("could not record what HubSpot accepted; will retry the record", a dozen
// times per replica in a 20,000-change chaos run).
func TestWritesRunAgainAfterADeadlock(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name, table string
		write       func(l *links.Links) error
		check       func(t *testing.T, l *links.Links)
	}{
		{"Link", "hubsync_link", func(l *links.Links) error {
			return l.Link(ctx, "hubspot", "contacts", "r1", "101")
		}, func(t *testing.T, l *links.Links) {
			if ext, ok, err := l.Lookup(ctx, "hubspot", "contacts", "r1"); err != nil || !ok || ext != "101" {
				t.Errorf("Lookup after the retried Link = %q, %v, %v; want 101", ext, ok, err)
			}
		}},
		{"LinkMany", "hubsync_link", func(l *links.Links) error {
			return l.LinkMany(ctx, "hubspot", "contacts", map[string]string{"r1": "101", "r2": "102"})
		}, func(t *testing.T, l *links.Links) {
			got, err := l.LookupMany(ctx, "hubspot", "contacts", []string{"r1", "r2"})
			if err != nil || got["r1"] != "101" || got["r2"] != "102" {
				t.Errorf("LookupMany after the retried LinkMany = %v, %v", got, err)
			}
		}},
		{"PushedMany", "hubsync_pushed", func(l *links.Links) error {
			return l.PushedMany(ctx, "hubspot", "contacts", []links.Pushed{{RecordID: "r1", ExternalID: "101", Version: 1, Fields: map[string]any{"email": "a@example.com"}}})
		}, func(t *testing.T, l *links.Links) {
			got, err := l.LookupPushedMany(ctx, "hubspot", "contacts", []string{"r1"})
			if err != nil || got["r1"].Version != 1 {
				t.Errorf("LookupPushedMany after the retried PushedMany = %v, %v", got, err)
			}
		}},
		{"AddOwed", "hubsync_owed", func(l *links.Links) error {
			return l.AddOwed(ctx, "hubspot", "contacts", "r1", []string{"email"})
		}, func(t *testing.T, l *links.Links) {
			got, err := l.LookupOwedMany(ctx, "hubspot", "contacts", []string{"r1"})
			if err != nil || len(got["r1"]) != 1 {
				t.Errorf("LookupOwedMany after the retried AddOwed = %v, %v", got, err)
			}
		}},
	}
	for _, d := range []store.Dialect{store.Postgres, store.MySQL} {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					st := newStore(t, d)
					l := links.New(st)
					fired := dbtest.FailOnce(t, st.DB(), d, c.table, "INSERT", 1)
					if err := c.write(l); err != nil {
						t.Fatalf("%s after one injected deadlock: %v", c.name, err)
					}
					if n := fired(); n < 2 {
						t.Errorf("the write reached %s %d times; want the deadlocked try and a retry", c.table, n)
					}
					c.check(t, l)
				})
			}
		})
	}
}
