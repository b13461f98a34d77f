package dispatch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

const (
	testWorkerURL = "https://worker.example.com/qstash/hubspot"
	testKey       = "sig_current_test_key"
	testNextKey   = "sig_next_test_key"
	testBudgetKey = "hubspot:test"
)

func testLogger() *slog.Logger {
	if os.Getenv("HUBSYNC_TEST_LOG") != "" {
		return slog.Default()
	}
	return slog.New(slog.DiscardHandler)
}

// published is one publish the fake QStash received.
type published struct {
	Dedup string
	Body  Body
	H     http.Header
}

// fakeQStash records publishes and, like QStash, answers a repeated
// deduplication id with the original message id.
type fakeQStash struct {
	srv  *httptest.Server
	mu   sync.Mutex
	pubs []published
	ids  map[string]string
	fail int // the next fail publishes answer 500
}

func newFakeQStash(t testing.TB) *fakeQStash {
	f := &fakeQStash{ids: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.fail > 0 {
			f.fail--
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`{"error":"injected"}`))
			return
		}
		var body Body
		json.Unmarshal(b, &body)
		d := r.Header.Get("Upstash-Deduplication-Id")
		f.pubs = append(f.pubs, published{Dedup: d, Body: body, H: r.Header.Clone()})
		id, dup := f.ids[d]
		if !dup {
			id = fmt.Sprintf("msg_%d", len(f.ids)+1)
			f.ids[d] = id
		}
		json.NewEncoder(w).Encode(qstash.PublishResult{MessageID: id, Deduplicated: dup})
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeQStash) published() []published {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]published(nil), f.pubs...)
}

// messages counts distinct messages (deduplicated publishes are one).
func (f *fakeQStash) messages() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.ids)
}

type bundle struct {
	clock   *storetest.Clock
	st      store.Store
	sim     *hubspotsim.Server
	budget  budget.Budget
	recs    *records.Service
	worker  *outbound.Worker
	handler *Handler
	qs      *fakeQStash
	pub     *PublishService
}

type options struct {
	budgetLimit int
}

func setup(t testing.TB, d store.Dialect, o options) *bundle {
	t.Helper()
	b := &bundle{clock: storetest.NewClock(time.Time{})}
	db := dbtest.Migrated(t, d)
	st, err := hubsync.NewStore(db.DB, db.Dialect, store.Config{Now: b.clock.Now, Retry: store.RetryPolicy{MaxAttempts: 5, BackoffBase: time.Second, BackoffMax: 4 * time.Second, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	b.st = st
	b.sim = hubspotsim.NewTest(t, hubspotsim.Config{Now: b.clock.Now, Seed: 7})
	// A budget out of the way unless the test sets one.
	if b.budget, err = budget.NewMemory(budget.Config{Limit: cmp.Or(o.budgetLimit, 10000), Now: b.clock.Now}); err != nil {
		t.Fatal(err)
	}
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: b.sim.URL(), AccessToken: hubspotsim.AccessTokenDefault, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lk := links.New(st)
	if b.recs, err = records.New(st, lk, records.Config{}); err != nil {
		t.Fatal(err)
	}
	if b.worker, err = outbound.NewWorker(outbound.Config{Store: st.Outbound(), HubSpot: client, Links: lk, Budget: b.budget, BudgetKey: testBudgetKey,
		HTTPTimeout: 2 * time.Second, LeaseDuration: 10 * time.Minute, Now: b.clock.Now, Logger: testLogger()}); err != nil {
		t.Fatal(err)
	}
	v, err := qstash.NewVerifier(qstash.VerifierConfig{CurrentSigningKey: testKey, NextSigningKey: testNextKey, URL: testWorkerURL, Now: b.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if b.handler, err = NewHandler(HandlerConfig{Store: st, Worker: b.worker, Verifier: v, Logger: testLogger()}); err != nil {
		t.Fatal(err)
	}
	b.qs = newFakeQStash(t)
	qc, err := qstash.NewClient(qstash.Config{URL: b.qs.srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	if b.pub, err = NewPublisher(PublisherConfig{Store: st, QStash: qc, WorkerURL: testWorkerURL, Now: b.clock.Now, Logger: testLogger(),
		FlowControl: qstash.FlowControl{Key: "hubspot-test", Rate: 150, Period: 10 * time.Second, Parallelism: 12},
		Retry:       store.RetryPolicy{BackoffBase: time.Second, BackoffMax: 4 * time.Second, NoJitter: true}}); err != nil {
		t.Fatal(err)
	}
	return b
}

// insert creates a contact and returns the id of its outbound event.
func (b *bundle) insert(t testing.TB, email string) (recordID string) {
	t.Helper()
	r, err := b.recs.Insert(context.Background(), "contacts", map[string]any{"email": email, "first_name": "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

// events returns the record's outbound events in order.
func (b *bundle) events(t testing.TB, recordID string) []store.OutboundEvent {
	t.Helper()
	rows, err := b.st.DB().QueryContext(context.Background(), dialectsql.Rebind(b.st.Dialect(), "SELECT Id FROM _System_IntegrationOutbound WHERE RecordID = ? ORDER BY Lane"), recordID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.OutboundEvent
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ev, err := b.st.Outbound().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func (b *bundle) event(t testing.TB, id string) store.OutboundEvent {
	t.Helper()
	ev, err := b.st.Outbound().Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// signed builds a delivery of body signed with key for the worker URL.
func (b *bundle) signed(body []byte, key string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, WorkerPath, bytes.NewReader(body))
	if key != "" {
		now := b.clock.Now()
		r.Header.Set(qstash.SignatureHeader, qstash.Sign(key, qstash.Claims{Issuer: qstash.Issuer, Subject: testWorkerURL,
			IssuedAt: now.Unix(), NotBefore: now.Unix(), ExpiresAt: now.Add(5 * time.Minute).Unix(), ID: "jwt", Body: qstash.BodyHash(body)}))
	}
	return r
}

// deliver sends a signed delivery of eventID and returns the answer.
func (b *bundle) deliver(t *testing.T, eventID string) *httptest.ResponseRecorder {
	t.Helper()
	body, _ := json.Marshal(Body{EventID: eventID})
	return b.serve(b.signed(body, testKey))
}

func (b *bundle) serve(r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	b.handler.ServeHTTP(w, r)
	return w
}

// contact returns the HubSpot contact with email, if any.
func (b *bundle) contact(email string) (hubspotsim.Object, bool) {
	for _, o := range b.sim.Objects("contacts") {
		if o.Properties["email"] == email && !o.Archived {
			return o, true
		}
	}
	return hubspotsim.Object{}, false
}
