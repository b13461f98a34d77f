package hubspot_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func simClient(t *testing.T, cfg hubspotsim.Config) (*hubspot.Client, *hubspotsim.Server) {
	t.Helper()
	sim := hubspotsim.NewTest(t, cfg)
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c, sim
}

func TestSimObjectsRoundTrip(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	var maxSeen atomic.Int64 // the largest X-HubSpot-RateLimit-Max reported to the hook
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, Timeout: 10 * time.Second,
		OnResponse: func(_ context.Context, r hubspot.Response) {
			if n := int64(r.RateLimit.Max); n > maxSeen.Load() {
				maxSeen.Store(n)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	created, err := c.BatchCreate(ctx, hubspot.Contacts, []hubspot.CreateInput{
		{Properties: map[string]string{"email": "a@example.com", "firstname": "A"}, ObjectWriteTraceID: "t1"},
		{Properties: map[string]string{"email": "b@example.com"}, ObjectWriteTraceID: "t2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(created.Results) != 2 || created.NumErrors != 0 {
		t.Fatalf("create: %+v", created)
	}
	id := created.Results[0].ID
	if created.Results[0].Properties["email"] != "a@example.com" {
		id = created.Results[1].ID
	}

	got, err := c.Get(ctx, hubspot.Contacts, id, []string{"email", "firstname"})
	if err != nil {
		t.Fatal(err)
	}
	if got.Properties["email"] != "a@example.com" || got.Properties["firstname"] != "A" || got.CreatedAt.IsZero() {
		t.Errorf("get: %+v", got)
	}

	read, err := c.BatchRead(ctx, hubspot.Contacts, []string{"a@example.com", "missing@example.com"}, []string{"email"}, "email")
	if err != nil {
		t.Fatal(err)
	}
	if read.ResultByID(id) == nil || read.NumErrors != 1 || !read.Multi {
		t.Errorf("batch read: %+v", read)
	}
	none, err := c.BatchRead(ctx, hubspot.Contacts, []string{"missing@example.com"}, []string{"email"}, "email")
	if err != nil || len(none.Results) != 0 || len(none.Errors) != 1 || none.Errors[0].Kind() != hubspot.KindNotFound {
		t.Errorf("batch read finding nothing: %+v, %v; want no objects and a not-found error", none, err)
	}

	up, err := c.BatchUpsert(ctx, hubspot.Contacts, []hubspot.UpsertInput{
		{ID: "a@example.com", IDProperty: "email", Properties: map[string]string{"lastname": "Z"}},
		{ID: "c@example.com", IDProperty: "email", Properties: map[string]string{"lastname": "Y"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := up.ResultByID(id); r == nil || r.New {
		t.Errorf("upsert of existing: %+v", up.Results)
	}

	if _, err := c.Update(ctx, hubspot.Contacts, id, map[string]string{"firstname": "AA"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchUpdate(ctx, hubspot.Contacts, []hubspot.UpdateInput{{ID: id, Properties: map[string]string{"firstname": "AAA"}}}); err != nil {
		t.Fatal(err)
	}

	_, err = c.BatchCreate(ctx, hubspot.Contacts, []hubspot.CreateInput{{Properties: map[string]string{"email": "a@example.com"}, ObjectWriteTraceID: "dup"}})
	var he *hubspot.Error
	switch {
	case errors.As(err, &he):
		if he.Kind != hubspot.KindConflict || he.ExistingID != id {
			t.Errorf("duplicate create: %v (existing %q, want %q)", err, he.ExistingID, id)
		}
	case err == nil:
		t.Errorf("duplicate create succeeded")
	default:
		t.Errorf("duplicate create: %v", err)
	}

	if err := c.Archive(ctx, hubspot.Contacts, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, hubspot.Contacts, id, nil); !errors.Is(err, hubspot.ErrNotFound) {
		t.Errorf("get after archive: %v", err)
	}
	if maxSeen.Load() == 0 {
		t.Errorf("no rate-limit headers seen")
	}
}

func TestSimRateLimited(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	c, _ := simClient(t, hubspotsim.Config{TenSecondLimit: 2, Now: func() time.Time { return now }})
	ctx := context.Background()
	var err error
	for range 5 {
		if _, err = c.Get(ctx, hubspot.Contacts, "1", nil); errors.Is(err, hubspot.ErrRateLimited) {
			break
		}
	}
	var he *hubspot.Error
	if !errors.As(err, &he) || he.Kind != hubspot.KindRateLimited || he.PolicyName == "" || he.RetryAfter <= 0 {
		t.Fatalf("got %v, want a 429 with policy and RetryAfter", err)
	}
}

func TestSimWebhookSignatureVerifies(t *testing.T) {
	t.Parallel()
	type delivery struct {
		err  error
		body []byte
	}
	got := make(chan delivery, 16)
	var url string
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		err := hubspot.VerifyRequest(hubspotsim.ClientSecretDefault, r.Method, url+r.URL.RequestURI(), body, r.Header, time.Now(), 0)
		got <- delivery{err, body}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	url = recv.URL
	c, sim := simClient(t, hubspotsim.Config{})
	if err := sim.SetWebhookURL(recv.URL + "/hooks/hubspot?x=1"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.BatchCreate(context.Background(), hubspot.Contacts, []hubspot.CreateInput{{Properties: map[string]string{"email": "w@example.com"}}}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-got:
		if d.err != nil {
			t.Fatalf("simulator webhook did not verify: %v (body %s)", d.err, d.body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no webhook delivered within 10s")
	}
}

// TestBatchReadArchived: an archived read returns a deleted contact with the
// properties asked for (its email), and a live one as not found; a plain
// read no longer finds the deleted one.
func TestBatchReadArchived(t *testing.T) {
	t.Parallel()
	c, _ := simClient(t, hubspotsim.Config{})
	ctx := context.Background()
	created, err := c.BatchCreate(ctx, hubspot.Contacts, []hubspot.CreateInput{
		{Properties: map[string]string{"email": "gone@example.com"}},
		{Properties: map[string]string{"email": "live@example.com"}},
	})
	if err != nil || len(created.Results) != 2 {
		t.Fatalf("create: %+v, %v", created, err)
	}
	gone, live := created.Results[0].ID, created.Results[1].ID
	if created.Results[0].Properties["email"] != "gone@example.com" {
		gone, live = live, gone
	}
	if err := c.BatchArchive(ctx, hubspot.Contacts, []string{gone}); err != nil {
		t.Fatal(err)
	}
	res, err := c.BatchReadArchived(ctx, hubspot.Contacts, []string{gone, live}, []string{"email"})
	if err != nil {
		t.Fatal(err)
	}
	o := res.ResultByID(gone)
	if o == nil || !o.Archived || o.Properties["email"] != "gone@example.com" {
		t.Fatalf("archived read of the deleted contact = %+v; want it archived, with its email", o)
	}
	if o := res.ResultByID(live); o != nil {
		t.Errorf("archived read of a live contact = %+v; want it not found", o)
	}
	if res, err := c.BatchRead(ctx, hubspot.Contacts, []string{gone}, []string{"email"}, ""); err != nil || res.ResultByID(gone) != nil {
		t.Errorf("plain read of the deleted contact = %+v, %v; want it not found", res, err)
	}
}
