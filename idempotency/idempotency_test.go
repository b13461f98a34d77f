package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/idempotency"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

type bundle struct {
	h     http.Handler
	runs  *atomic.Int64
	store *idempotency.Store
	now   *atomic.Int64 // unix seconds of the store clock
	fail  *atomic.Bool
}

func setup(t *testing.T, d store.Dialect) bundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	now := &atomic.Int64{}
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix())
	st, err := hubsync.NewStore(db.DB, d, store.Config{Now: func() time.Time { return time.Unix(now.Load(), 0) }})
	if err != nil {
		t.Fatal(err)
	}
	runs, fail := &atomic.Int64{}, &atomic.Bool{}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		if fail.Load() {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", fmt.Sprintf("/api/records/contacts/r%d", n))
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"run":%d,"echo":%q}`, n, body)
	})
	s := idempotency.NewStore(st)
	return bundle{h: idempotency.Middleware(idempotency.Config{Store: s, Scope: "records", Retention: time.Hour}, next), runs: runs, store: s, now: now, fail: fail}
}

func (b bundle) do(method, path, key, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if key != "" {
		r.Header.Set("Idempotency-Key", key)
	}
	w := httptest.NewRecorder()
	b.h.ServeHTTP(w, r)
	return w
}

func TestMiddleware(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		first := b.do("POST", "/api/records/contacts", "k1", `{"fields":{"a":1}}`)
		if first.Code != 201 || b.runs.Load() != 1 {
			t.Fatalf("first = %d, runs %d", first.Code, b.runs.Load())
		}
		again := b.do("POST", "/api/records/contacts", "k1", `{"fields":{"a":1}}`)
		if again.Code != 201 || again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" || b.runs.Load() != 1 {
			t.Fatalf("retry = %d %q, runs %d; want the stored answer, no second run", again.Code, again.Body, b.runs.Load())
		}
		for _, h := range []string{"Content-Type", "Location"} {
			if again.Header().Get(h) != first.Header().Get(h) || first.Header().Get(h) == "" {
				t.Fatalf("retry's %s %q; want the first answer's %q", h, again.Header().Get(h), first.Header().Get(h))
			}
		}
		if c := b.do("POST", "/api/records/contacts", "k1", `{"fields":{"a":2}}`); c.Code != 409 || !strings.Contains(c.Body.String(), "k1") || b.runs.Load() != 1 {
			t.Fatalf("other body = %d %q; want 409 naming the key, no run", c.Code, c.Body)
		}
		if c := b.do("PATCH", "/api/records/contacts/x", "k1", `{"fields":{"a":1}}`); c.Code != 409 {
			t.Fatalf("other path = %d; want 409", c.Code)
		}
		if c := b.do("POST", "/api/records/contacts", "", `{}`); c.Code != 201 || b.runs.Load() != 2 {
			t.Fatalf("no key = %d, runs %d; want a plain run", c.Code, b.runs.Load())
		}
		// A 5xx is not stored: the retry runs again.
		b.fail.Store(true)
		if c := b.do("DELETE", "/api/records/contacts/y", "k2", ""); c.Code != 500 {
			t.Fatalf("failing = %d", c.Code)
		}
		b.fail.Store(false)
		if c := b.do("DELETE", "/api/records/contacts/y", "k2", ""); c.Code != 201 || b.runs.Load() != 4 {
			t.Fatalf("retry after 5xx = %d, runs %d; want a new run", c.Code, b.runs.Load())
		}
		// After the retention the key is new again, and the cleanup removes it.
		b.now.Add(int64(2 * time.Hour / time.Second))
		if c := b.do("POST", "/api/records/contacts", "k1", `{"fields":{"a":2}}`); c.Code != 201 || b.runs.Load() != 5 {
			t.Fatalf("expired key = %d, runs %d; want a new run", c.Code, b.runs.Load())
		}
		n, err := b.store.Cleanup(context.Background(), time.Unix(b.now.Load(), 0).Add(-time.Hour))
		if err != nil || n != 1 {
			t.Fatalf("cleanup = %d, %v; want the one expired key (k2)", n, err)
		}
	})
}

func TestConcurrentRetries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		var wg sync.WaitGroup
		codes := make([]int, 8)
		for i := range codes {
			wg.Go(func() { codes[i] = b.do("POST", "/api/records/contacts", "same", `{"fields":{}}`).Code })
		}
		wg.Wait()
		if b.runs.Load() != 1 {
			t.Fatalf("the handler ran %d times for one key, want 1 (codes %v)", b.runs.Load(), codes)
		}
		for _, c := range codes {
			if c != 201 && c != 409 {
				t.Fatalf("codes %v: want 201 (run or replay) or 409 (in progress)", codes)
			}
		}
	})
}

// TestExpiredKeyConcurrentRetries: two retries of an expired key that the
// cleanup has not deleted yet. B reads the expired row and stops; A forgets
// it, claims the key afresh and runs. B, going on, must not forget A's fresh
// claim (it forgets only the row that expired): it answers 409 while A runs,
// and the handler runs once.
func TestExpiredKeyConcurrentRetries(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		var offset atomic.Int64
		// While armed, the store clock's second reading (B's expiry check,
		// after its claim and its read) waits for release.
		var armed atomic.Int64
		stopped, release := make(chan struct{}), make(chan struct{})
		now := func() time.Time {
			if armed.Load() > 0 && armed.Add(1) == 3 {
				close(stopped)
				<-release
			}
			return base.Add(time.Duration(offset.Load()))
		}
		st, err := hubsync.NewStore(db.DB, d, store.Config{Now: now})
		if err != nil {
			t.Fatal(err)
		}
		var runs atomic.Int64
		inA, finishA := make(chan struct{}), make(chan struct{})
		next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 2 { // A's run: held until B has answered
				close(inA)
				<-finishA
			}
			w.WriteHeader(http.StatusCreated)
		})
		h := idempotency.Middleware(idempotency.Config{Store: idempotency.NewStore(st), Scope: "records", Retention: time.Hour}, next)
		do := func() int {
			r := httptest.NewRequest("POST", "/api/records/contacts", strings.NewReader(`{}`))
			r.Header.Set("Idempotency-Key", "k")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			return w.Code
		}
		if c := do(); c != http.StatusCreated {
			t.Fatalf("first request = %d", c)
		}
		offset.Store(int64(2 * time.Hour)) // the key expired
		armed.Store(1)
		codeB, codeA := make(chan int, 1), make(chan int, 1)
		go func() { codeB <- do() }()
		<-stopped
		armed.Store(0)
		go func() { codeA <- do() }()
		<-inA
		close(release)
		b := <-codeB // answers while A still runs (or, wrongly, runs itself)
		close(finishA)
		a := <-codeA
		if runs.Load() != 2 || a != http.StatusCreated || b != http.StatusConflict {
			t.Fatalf("the handler ran %d times for the expired key's two retries (A %d, B %d); want once, A 201 and B 409 (in progress)", runs.Load()-1, a, b)
		}
	})
}

// TestMalformedKey: a key that is not printable UTF-8 is the client's
// mistake, answered 400 before anything runs, on every database (PostgreSQL
// and MariaDB refused to store it, a 500).
func TestMalformedKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		for _, key := range []string{"k\xff\xfe", "a\x00b"} {
			if w := b.do("POST", "/api/records/contacts", key, `{}`); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "Idempotency-Key") {
				t.Errorf("Idempotency-Key %q = %d %s; want 400 naming the header", key, w.Code, w.Body)
			}
		}
		if n := b.runs.Load(); n != 0 {
			t.Fatalf("the handler ran %d times for malformed keys", n)
		}
	})
}

// A handler that panics leaves no key in progress: the retry runs.
func TestPanickedRequestCanBeRetried(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		var runs atomic.Int64
		h := idempotency.Middleware(idempotency.Config{Store: b.store, Scope: "records"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				panic("handler bug")
			}
			w.WriteHeader(http.StatusCreated)
		}))
		do := func() (code int, panicked any) {
			defer func() { panicked = recover() }()
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/api/records/contacts", strings.NewReader(`{}`))
			r.Header.Set("Idempotency-Key", "k-panic")
			h.ServeHTTP(w, r)
			return w.Code, nil
		}
		if _, p := do(); p != "handler bug" {
			t.Fatalf("first request's panic = %v; want the handler's, passed on", p)
		}
		if code, p := do(); code != http.StatusCreated || p != nil || runs.Load() != 2 {
			t.Fatalf("retry = %d (panic %v), runs %d; want 201 from a second run, not 409 in progress", code, p, runs.Load())
		}
	})
}

// A key whose first request has not finished answers 409 with Retry-After,
// however long it takes: the request may have written already (its process
// may have died after its commit and before its answer was stored), so a
// retry must not run it again. Only the key's expiry frees it.
func TestKeyInProgressIsNeverRunTwice(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		release := make(chan struct{})
		started := make(chan struct{})
		var runs atomic.Int64
		h := idempotency.Middleware(idempotency.Config{Store: b.store, Scope: "records", Retention: time.Hour}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if runs.Add(1) == 1 {
				close(started)
				<-release // written, and never answered in time
			}
			w.WriteHeader(http.StatusCreated)
		}))
		do := func() *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/api/records/contacts", strings.NewReader(`{"a":1}`))
			r.Header.Set("Idempotency-Key", "k-slow")
			h.ServeHTTP(w, r)
			return w
		}
		done := make(chan struct{})
		go func() { defer close(done); do() }()
		<-started
		if w := do(); w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || runs.Load() != 1 {
			t.Fatalf("retry during the first request = %d (Retry-After %q), runs %d; want 409 with Retry-After and no second run", w.Code, w.Header().Get("Retry-After"), runs.Load())
		}
		// Past any request's run: still never run again, and the answer
		// says to check the resource and use a new key, not to retry.
		for _, wait := range []time.Duration{10 * time.Minute, 50 * time.Minute} {
			b.now.Add(int64(wait / time.Second))
			if w := do(); w.Code != http.StatusConflict || w.Header().Get("Retry-After") != "" || !strings.Contains(w.Body.String(), "new key") || runs.Load() != 1 {
				t.Fatalf("retry %s into the first request = %d (Retry-After %q) %s, runs %d; want 409 without Retry-After, naming a new key, and no second run", wait, w.Code, w.Header().Get("Retry-After"), w.Body, runs.Load())
			}
		}
		close(release)
		<-done
		if w := do(); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "true" || runs.Load() != 1 {
			t.Fatalf("retry after the first answered = %d replayed %q, runs %d; want its stored answer", w.Code, w.Header().Get("Idempotent-Replayed"), runs.Load())
		}
	})
}

// TestLongKeyAndOversizedBody: a key past MaxKeyLength is refused before the
// handler runs; a body past MaxBodyBytes is not kept, and the handler gets it
// whole, byte for byte, to refuse as it does.
func TestLongKeyAndOversizedBody(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d)
		long := strings.Repeat("k", idempotency.MaxKeyLength+1)
		if w := b.do("POST", "/api/records/contacts", long, `{}`); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), strconv.Itoa(idempotency.MaxKeyLength)) {
			t.Errorf("a key of %d characters = %d %s; want 400 naming the limit", len(long), w.Code, w.Body)
		}
		if n := b.runs.Load(); n != 0 {
			t.Fatalf("the handler ran %d times for an over-long key", n)
		}

		var got atomic.Pointer[[]byte]
		h := idempotency.Middleware(idempotency.Config{Store: b.store, Scope: "records"}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got.Store(&body)
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		}))
		sent := make([]byte, idempotency.MaxBodyBytes+4096)
		for i := range sent {
			sent[i] = byte('a' + i%26)
		}
		for range 2 {
			w := httptest.NewRecorder()
			r := httptest.NewRequest("POST", "/api/records/contacts", bytes.NewReader(sent))
			r.Header.Set("Idempotency-Key", "k-huge")
			h.ServeHTTP(w, r)
			if w.Code != http.StatusRequestEntityTooLarge || w.Header().Get("Idempotent-Replayed") != "" {
				t.Fatalf("oversized body = %d (replayed %q); want the handler's 413, not a replay", w.Code, w.Header().Get("Idempotent-Replayed"))
			}
			if p := got.Load(); p == nil || !bytes.Equal(*p, sent) {
				n := -1
				if p != nil {
					n = len(*p)
				}
				t.Fatalf("the handler read %d bytes, not the %d sent", n, len(sent))
			}
		}
	})
}
