package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// opsBundle is a store with dead letters to serve through the admin API.
type opsBundle struct {
	st    store.Store
	clock *storetest.Clock
}

func setupOps(t testing.TB, d store.Dialect) opsBundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	clock := storetest.NewClock(time.Time{})
	st, err := hubsync.NewStore(db.DB, d, store.Config{Now: clock.Now, Retry: store.RetryPolicy{MaxAttempts: 1, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	return opsBundle{st: st, clock: clock}
}

// deadOutbound enqueues n outbound events for dest and dead-letters them.
func (b opsBundle) deadOutbound(t *testing.T, dest string, n int) []string {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		rec := fmt.Sprintf("%s-%d", dest, i)
		p, err := outbox.Snapshot{ID: rec, Fields: map[string]any{"email": rec + "@example.com"}}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		ev := store.OutboundEvent{Destination: dest, ObjectType: "contacts", RecordID: rec, EventType: store.EventCreate, Payload: p}
		if _, err := b.st.Outbound().Enqueue(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := b.st.Outbound().Claim(ctx, store.ClaimParams{Key: dest, Limit: n})
	if err != nil || len(evs) != n {
		t.Fatalf("claim: %d events, %v", len(evs), err)
	}
	var ids []string
	for _, e := range evs {
		if err := b.st.Outbound().Fail(ctx, e.Lease(), "boom "+e.RecordID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func adminServer(t testing.TB, b opsBundle, token string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	rejected, err := inbound.NewRejectedLog(b.st)
	if err != nil {
		t.Fatal(err)
	}
	(&adminAPI{token: []byte(token), st: b.st, rejected: rejected, reconcileAfter: ops.ReconcileAfterDefault, log: slog.New(slog.DiscardHandler)}).register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	return callWith(t, method, url, token, strings.NewReader(body))
}

// callWith is call with the body as a reader: one that is neither a bytes
// nor a strings reader goes out chunked, with no declared length.
func callWith(t *testing.T, method, url, token string, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAdminAuth(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testAdminAuth)
}

func testAdminAuth(t *testing.T, d store.Dialect) {
	b := setupOps(t, d)
	off := adminServer(t, b, "")
	on := adminServer(t, b, "s3cret")
	routes := []struct{ method, path, body string }{
		{"GET", "/admin/metrics", ""},
		{"GET", "/admin/deadletters?direction=outbound", ""},
		{"GET", "/admin/rejected", ""},
		{"POST", "/admin/deadletters/retry", `{"direction":"outbound","key":"hubspot","all":true}`},
		{"POST", "/admin/reconcile", `{}`},
	}
	for _, r := range routes {
		if code, _ := call(t, r.method, off.URL+r.path, "s3cret", r.body); code != http.StatusNotFound {
			t.Errorf("no token configured: %s %s = %d, want 404", r.method, r.path, code)
		}
		for _, wrong := range []string{"", "s3cre", "s3cret2", "S3CRET"} {
			if code, _ := call(t, r.method, on.URL+r.path, wrong, r.body); code != http.StatusUnauthorized {
				t.Errorf("token %q: %s %s = %d, want 401", wrong, r.method, r.path, code)
			}
		}
		if code, body := call(t, r.method, on.URL+r.path, "s3cret", r.body); code != http.StatusOK {
			t.Errorf("right token: %s %s = %d %s, want 200", r.method, r.path, code, body)
		}
	}
}

func TestAdminDeadLettersAndRetry(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testAdminDeadLettersAndRetry)
}

func testAdminDeadLettersAndRetry(t *testing.T, d store.Dialect) {
	b := setupOps(t, d)
	ids := b.deadOutbound(t, "hubspot", 3)
	srv := adminServer(t, b, "tok")

	code, body := call(t, "GET", srv.URL+"/admin/deadletters?direction=outbound&key=hubspot&limit=2", "tok", "")
	if code != 200 {
		t.Fatalf("list = %d %s", code, body)
	}
	var page deadLettersResponse
	if err := json.Unmarshal([]byte(body), &page); err != nil {
		t.Fatal(err)
	}
	if len(page.DeadLetters) != 2 || len(ids) != 3 || page.Next != page.DeadLetters[1].ID {
		t.Fatalf("page = %+v", page)
	}

	code, body = call(t, "POST", srv.URL+"/admin/deadletters/retry", "tok", `{"direction":"outbound","ids":["`+ids[0]+`"]}`)
	if code != 200 || !strings.Contains(body, `"requeued": 1`) || strings.Contains(body, "not_dead_letters") {
		t.Fatalf("retry ids = %d %s", code, body)
	}
	// Without a direction, outbound (as GET and hubsync dlq); each id left
	// alone is said, with where it is.
	code, body = call(t, "POST", srv.URL+"/admin/deadletters/retry", "tok", `{"ids":["`+ids[0]+`","no-such-id"]}`)
	if code != 200 || !strings.Contains(body, `"requeued": 0`) || !strings.Contains(body, ids[0]+`: a pending event of the outbound queue`) || !strings.Contains(body, "no-such-id: no event has this id") {
		t.Fatalf("retry of ids that are no dead letters = %d %s", code, body)
	}
	code, body = call(t, "POST", srv.URL+"/admin/deadletters/retry", "tok", `{"direction":"outbound","key":"hubspot","all":true}`)
	if code != 200 || !strings.Contains(body, `"requeued": 2`) {
		t.Fatalf("retry all = %d %s", code, body)
	}

	// Without ?direction=, outbound, as `hubsync dlq`.
	code, body = call(t, "GET", srv.URL+"/admin/deadletters", "tok", "")
	if page = (deadLettersResponse{}); code != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.DeadLetters) != 0 {
		t.Fatalf("list without a direction = %d %s; want 200, the outbound dead letters (none left)", code, body)
	}

	for _, bad := range []struct{ method, path, body string }{
		{"GET", "/admin/deadletters?direction=sideways", ""},
		{"GET", "/admin/deadletters?direction=outbound&limit=-1", ""},
		{"POST", "/admin/deadletters/retry", `{"direction":"outbound","all":true}`},
		{"POST", "/admin/deadletters/retry", `{"direction":"outbound","ids":["x"],"extra":1}`},
		{"POST", "/admin/deadletters/retry", `not json`},
		{"POST", "/admin/reconcile", `{"older_than":"whenever"}`},
		// Text no database can hold (PostgreSQL refused it with a 500).
		{"GET", "/admin/deadletters?direction=outbound&key=%ff", ""},
		{"GET", "/admin/deadletters?direction=outbound&after=a%00b", ""},
		{"GET", "/admin/rejected?before=%ff", ""},
		{"POST", "/admin/deadletters/retry", `{"direction":"outbound","key":"\u0000","all":true}`},
		{"POST", "/admin/deadletters/retry", `{"direction":"outbound","ids":["a\u0000b"]}`},
	} {
		if code, body := call(t, bad.method, srv.URL+bad.path, "tok", bad.body); code != http.StatusBadRequest {
			t.Errorf("%s %s %s = %d %s, want 400", bad.method, bad.path, bad.body, code, body)
		}
	}

	code, body = call(t, "GET", srv.URL+"/admin/metrics", "tok", "")
	var m ops.Metrics
	if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m.Pending != 3 || len(m.Queues) == 0 || m.Queues[0].Direction != store.DirectionOutbound {
		t.Fatalf("metrics = %d %s", code, body)
	}
}

// TestAdminRejected: GET /admin/rejected lists the refused webhook events,
// newest first, in pages; the cleanup deletes them with the inbound retention.
func TestAdminRejected(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testAdminRejected)
}

func testAdminRejected(t *testing.T, d store.Dialect) {
	b := setupOps(t, d)
	log, err := inbound.NewRejectedLog(b.st)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 3 {
		if err := log.RecordRejected(ctx, []inbound.RejectedEvent{{
			Reason: inbound.EventRejectMalformed, Message: "event 0: objectId: required", RawPayload: fmt.Sprintf(`{"n":%d}`, i), ReceivedAt: b.clock.Now(),
		}}); err != nil {
			t.Fatal(err)
		}
	}
	srv := adminServer(t, b, "tok")
	code, body := call(t, "GET", srv.URL+"/admin/rejected?limit=2", "tok", "")
	var page rejectedResponse
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Rejected) != 2 || page.Next == "" {
		t.Fatalf("page 1 = %d %s", code, body)
	}
	if page.Rejected[0].RawPayload != `{"n":2}` || page.Rejected[0].Reason != inbound.EventRejectMalformed {
		t.Fatalf("newest reject = %+v", page.Rejected[0])
	}
	code, body = call(t, "GET", srv.URL+"/admin/rejected?limit=2&before="+page.Next, "tok", "")
	page = rejectedResponse{}
	if code != 200 || json.Unmarshal([]byte(body), &page) != nil || len(page.Rejected) != 1 || page.Rejected[0].RawPayload != `{"n":0}` || page.Next != "" {
		t.Fatalf("page 2 = %d %s", code, body)
	}
	if code, _ := call(t, "GET", srv.URL+"/admin/rejected?limit=0", "tok", ""); code != http.StatusBadRequest {
		t.Fatalf("limit=0 = %d, want 400", code)
	}
	b.clock.Advance(ops.InboundRetentionDefault - time.Minute)
	if res, err := ops.Cleanup(ctx, b.st, ops.CleanupConfig{}); err != nil || res.Rejected != 0 {
		t.Fatalf("cleanup inside the retention = %+v, %v", res, err)
	}
	b.clock.Advance(2 * time.Minute)
	if res, err := ops.Cleanup(ctx, b.st, ops.CleanupConfig{}); err != nil || res.Rejected != 3 {
		t.Fatalf("cleanup past the retention = %+v, %v; want 3 rejected deleted", res, err)
	}
}
