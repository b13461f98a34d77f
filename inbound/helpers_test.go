package inbound

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

const (
	testSecret    = "test-client-secret"
	testPublicURL = "https://crm.example.com"
	testAppID     = "4242"
)

// bundle is what setup gives a test.
type bundle struct {
	db       *sql.DB
	store    store.Store
	clock    *storetest.Clock
	receiver *Receiver
	applier  *memApplier
}

// setup returns a migrated SQLite store on an injected clock and a Receiver on it.
func setup(t testing.TB) *bundle {
	t.Helper()
	return setupDialect(t, store.SQLite, store.RetryPolicy{NoJitter: true, MaxAttempts: 3})
}

func setupDialect(t testing.TB, d store.Dialect, retry store.RetryPolicy) *bundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	clock := storetest.NewClock(time.Time{})
	st := openStore(t, d, db.DB, store.Config{Now: clock.Now, Retry: retry})
	rc, err := NewReceiver(ReceiverConfig{
		Store: st.Inbound(), ClientSecret: testSecret, PublicURL: testPublicURL,
		Now: clock.Now, AppID: testAppID,
	})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{db: db.DB, store: st, clock: clock, receiver: rc, applier: newMemApplier()}
}

// newWorker returns a Worker on the bundle's store and applier.
func (b *bundle) newWorker(t testing.TB, reader ObjectReader, owner string, mut ...func(*WorkerConfig)) *Worker {
	t.Helper()
	cfg := WorkerConfig{
		Store: b.store.Inbound(), Applier: b.applier, HubSpot: reader, AppID: testAppID,
		Owner: owner, Now: b.clock.Now, LeaseDuration: time.Minute,
	}
	for _, m := range mut {
		m(&cfg)
	}
	w, err := NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// count returns the number of rows in the inbound table.
func (b *bundle) count(t testing.TB) int {
	t.Helper()
	var n int
	if err := b.db.QueryRow("SELECT COUNT(*) FROM _System_IntegrationInbound").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// all returns every inbound row, oldest first.
func (b *bundle) all(t testing.TB) []store.InboundEvent {
	t.Helper()
	rows, err := b.db.Query("SELECT Id FROM _System_IntegrationInbound ORDER BY CreatedDate, Id")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	out := make([]store.InboundEvent, 0, len(ids))
	for _, id := range ids {
		ev, err := b.store.Inbound().Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// statuses returns the inbound rows' statuses by idempotency order of insertion.
func (b *bundle) statusCounts(t testing.TB) map[string]int {
	t.Helper()
	rows, err := b.db.Query("SELECT Status, COUNT(*) FROM _System_IntegrationInbound GROUP BY Status")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			t.Fatal(err)
		}
		out[s] = n
	}
	return out
}

// signedRequest builds a v3-signed delivery request for the receiver at path.
func signedRequest(t testing.TB, body []byte, at time.Time) *http.Request {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, WebhookPath, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	ts := at.UnixMilli()
	req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(testSecret, http.MethodPost, testPublicURL+WebhookPath, body, ts))
	req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(ts, 10))
	return req
}

// deliver sends a signed delivery through the bundle's receiver.
func (b *bundle) deliver(t testing.TB, body []byte) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	b.receiver.ServeHTTP(rec, signedRequest(t, body, b.clock.Now()))
	return rec
}

func (b *bundle) deliverEvents(t testing.TB, evs ...hubspot.WebhookEvent) {
	t.Helper()
	body, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	if rec := b.deliver(t, body); rec.Code != http.StatusOK {
		t.Fatalf("delivery answered %d: %s", rec.Code, rec.Body)
	}
}

func openStore(t testing.TB, d store.Dialect, db *sql.DB, cfg store.Config) store.Store {
	t.Helper()
	st, err := hubsync.NewStore(db, d, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// drain runs RunOnce until nothing is claimable.
func drain(t testing.TB, w *Worker) int {
	t.Helper()
	total := 0
	for range 100 {
		n, err := w.RunOnce(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return total
		}
		total += n
	}
	t.Fatal("drain: queue never emptied")
	return total
}

// memRecord is a record of memApplier.
type memRecord struct {
	ID         string
	ExternalID string
	Fields     map[string]any
	clocks     map[string]time.Time
	Deleted    bool
	Anonymised bool
}

// memApplier is a small in-memory Applier with the per-field monotonic guard,
// for tests that exercise the worker without the records package.
type memApplier struct {
	mu      sync.Mutex
	nextID  int
	records map[string]*memRecord // by local id
	byExt   map[string]string     // objectType/externalID → local id
	calls   []apply.Change
	fail    func(apply.Change) error
	// guardPartial makes a Partial change of an unlinked external id fail
	// with apply.ErrUnlinked, as apply.Guarded does.
	guardPartial bool
}

func newMemApplier() *memApplier {
	return &memApplier{records: map[string]*memRecord{}, byExt: map[string]string{}}
}

var errNoSyncSource = errors.New("memApplier: context not marked with sync source hubspot")

func (a *memApplier) Apply(ctx context.Context, ch apply.Change) (apply.Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if outbox.SyncSource(ctx) != outbox.SyncSourceHubSpot {
		return apply.Result{}, fmt.Errorf("%w: %w", apply.ErrPermanent, errNoSyncSource)
	}
	a.calls = append(a.calls, ch)
	if a.fail != nil {
		if err := a.fail(ch); err != nil {
			return apply.Result{}, err
		}
	}
	key := ch.ObjectType + "/" + ch.ExternalID
	rec := a.records[a.byExt[key]]
	switch ch.Kind {
	case store.EventMerge:
		if rec == nil {
			rec = a.newRecord(key, ch.ExternalID)
		}
		for _, m := range ch.MergedIDs {
			mk := ch.ObjectType + "/" + m
			if old := a.records[a.byExt[mk]]; old != nil && old != rec {
				old.Deleted = true
			}
			delete(a.byExt, mk)
		}
		return apply.Result{RecordID: rec.ID, Outcome: "merged"}, nil
	case store.EventDelete, store.EventPrivacyDelete:
		if rec == nil {
			return apply.Result{Outcome: "ignored"}, nil
		}
		if !ch.OccurredAt.After(rec.clocks["_deleted"]) {
			return apply.Result{RecordID: rec.ID, Outcome: "stale", Stale: []string{"_deleted"}}, nil
		}
		rec.clocks["_deleted"] = ch.OccurredAt
		rec.Deleted = true
		if ch.Kind == store.EventPrivacyDelete {
			rec.Fields, rec.Anonymised = map[string]any{}, true
		}
		return apply.Result{RecordID: rec.ID, Outcome: "deleted"}, nil
	}
	if rec == nil && ch.MatchField != "" {
		for _, r := range a.records {
			value := r.Fields[ch.MatchField]
			if ch.MatchField == mapping.RecordIDField {
				value = r.ID
			}
			if r.ExternalID == "" && value == ch.MatchValue {
				rec = r
				rec.ExternalID = ch.ExternalID
				a.byExt[key] = r.ID
				break
			}
		}
	}
	outcome := apply.Updated
	if rec == nil && ch.Partial && a.guardPartial {
		// As apply.Guarded: a record made of the changed properties only
		// could take the link of the record that created the object.
		return apply.Result{}, fmt.Errorf("%w: %s %s", apply.ErrUnlinked, ch.ObjectType, ch.ExternalID)
	}
	if rec == nil {
		rec = a.newRecord(key, ch.ExternalID)
		outcome = apply.Created
	}
	if ch.Kind == store.EventRestore && ch.OccurredAt.After(rec.clocks["_deleted"]) {
		rec.Deleted = false
		rec.clocks["_deleted"] = ch.OccurredAt
	}
	res := apply.Result{RecordID: rec.ID, Outcome: outcome}
	for _, k := range slices.Sorted(maps.Keys(ch.Fields)) {
		if !ch.OccurredAt.After(rec.clocks[k]) {
			res.Stale = append(res.Stale, k)
			continue
		}
		rec.clocks[k] = ch.OccurredAt
		if v := ch.Fields[k]; v == nil {
			delete(rec.Fields, k)
		} else {
			rec.Fields[k] = v
		}
		res.Applied = append(res.Applied, k)
	}
	if len(res.Applied) == 0 && len(res.Stale) > 0 {
		res.Outcome = "stale"
	}
	return res, nil
}

func (a *memApplier) newRecord(key, ext string) *memRecord {
	a.nextID++
	r := &memRecord{ID: "r" + strconv.Itoa(a.nextID), ExternalID: ext, Fields: map[string]any{}, clocks: map[string]time.Time{}}
	a.records[r.ID] = r
	a.byExt[key] = r.ID
	return r
}

// insertLocal adds a local record without an external id (as if created here
// and pushed by the outbound worker).
func (a *memApplier) insertLocal(fields map[string]any) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.nextID++
	r := &memRecord{ID: "r" + strconv.Itoa(a.nextID), Fields: fields, clocks: map[string]time.Time{}}
	a.records[r.ID] = r
	return r.ID
}

// record returns a copy of the live record with the external id, or false.
func (a *memApplier) record(objectType, ext string) (memRecord, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	r := a.records[a.byExt[objectType+"/"+ext]]
	if r == nil {
		return memRecord{}, false
	}
	c := *r
	c.Fields = maps.Clone(r.Fields)
	return c, true
}

func (a *memApplier) numRecords() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.records)
}

func (a *memApplier) numCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.calls)
}

// fakeReader is an ObjectReader serving fixed objects, counting calls.
type fakeReader struct {
	mu      sync.Mutex
	objects map[string]hubspot.Object // by id
	err     error
	calls   int
	maxIDs  int
	// answered, when set, is called with each read's context, as a client's
	// OnResponse hook would be.
	answered func(ctx context.Context)
}

func (f *fakeReader) BatchRead(ctx context.Context, _ hubspot.ObjectType, ids []string, properties []string, _ string) (*hubspot.BatchResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.answered != nil {
		f.answered(ctx)
	}
	f.maxIDs = max(f.maxIDs, len(ids))
	if f.err != nil {
		return nil, f.err
	}
	res := &hubspot.BatchResult{Status: "COMPLETE"}
	for _, id := range ids {
		if o, ok := f.objects[id]; ok {
			// As HubSpot: only the properties asked for.
			o.Properties = maps.Clone(o.Properties)
			maps.DeleteFunc(o.Properties, func(k, _ string) bool { return !slices.Contains(properties, k) })
			res.Results = append(res.Results, o)
		}
	}
	return res, nil
}

// fakeBudget grants a fixed number of tokens, then refuses with RetryAfter.
type fakeBudget struct {
	mu         sync.Mutex
	left       int
	retryAfter time.Duration
	reserved   int
	observed   []budget.Observation
}

func (f *fakeBudget) Reserve(_ context.Context, _ string, tokens int) (budget.Reservation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.left < tokens {
		return budget.Reservation{RetryAfter: f.retryAfter}, nil
	}
	f.left -= tokens
	f.reserved += tokens
	return budget.Reservation{Granted: true}, nil
}

func (f *fakeBudget) Observe(_ context.Context, _ string, o budget.Observation) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.observed = append(f.observed, o)
	return nil
}

var _ budget.Budget = (*fakeBudget)(nil)
