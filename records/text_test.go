package records

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/store"
)

// TestSameTextAnswerOnEveryDatabase: a NUL character or invalid UTF-8, in a
// field name or value, nested or not, is refused the same way on every
// database (400 over HTTP, ErrInvalid from the library, a permanent failure
// when applied from HubSpot) and nothing is written; valid text, non-ASCII
// included, is stored as sent.
func TestSameTextAnswerOnEveryDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		h := b.svc.Handler()
		ok := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"ok@example.com","name":"Zoë ☃ 日本"}}`)
		fields, _ := ok.body["fields"].(map[string]any)
		if ok.status != 201 || fields["name"] != "Zoë ☃ 日本" {
			t.Fatalf("valid text = %d %v", ok.status, ok.body)
		}
		id := testcheck.As[string](t, "the created record's id", ok.body["id"])
		bad := map[string]string{
			"NUL in a value":        `{"fields":{"name":"a\u0000b"}}`,
			"NUL in a name":         `{"fields":{"na\u0000me":"x"}}`,
			"NUL in a nested value": `{"fields":{"tags":["x",{"k":"\u0000"}]}}`,
			"NUL in a nested key":   `{"fields":{"obj":{"a\u0000":1}}}`,
			"invalid UTF-8 value":   "{\"fields\":{\"name\":\"a\xffb\"}}",
			"invalid UTF-8 name":    "{\"fields\":{\"n\xc3\":\"x\"}}",
			"name ending in space":  `{"fields":{"name ":"x"}}`,
		}
		for name, body := range bad {
			if r := call(t, h, "POST", "/api/records/contacts", body); r.status != 400 {
				t.Errorf("%s: create = %d %v, want 400", name, r.status, r.body)
			}
			if r := call(t, h, "PATCH", "/api/records/contacts/"+id, strings.Replace(body, `{"fields"`, `{"version":1,"fields"`, 1)); r.status != 400 {
				t.Errorf("%s: patch = %d %v, want 400", name, r.status, r.body)
			}
		}
		for name, fields := range map[string]map[string]any{
			"NUL":           {"name": "a\x00b"},
			"invalid UTF-8": {"name": "a\xffb"},
			"nested":        {"obj": map[string]any{"k": []any{"\x00"}}},
		} {
			if _, err := b.svc.Insert(ctx, "contacts", fields); !errors.Is(err, ErrInvalid) {
				t.Errorf("Insert %s: %v, want ErrInvalid", name, err)
			}
			if _, err := b.svc.Update(ctx, "contacts", id, 1, fields); !errors.Is(err, ErrInvalid) {
				t.Errorf("Update %s: %v, want ErrInvalid", name, err)
			}
			ch := apply.Change{Source: "hubspot", Kind: store.EventUpdate, ObjectType: "contacts", ExternalID: "9" + name, Fields: fields, OccurredAt: b.clock.Now()}
			if _, err := b.svc.Apply(ctx, ch); !errors.Is(err, apply.ErrPermanent) {
				t.Errorf("Apply %s: %v, want ErrPermanent", name, err)
			}
		}
		recs, err := b.svc.List(ctx, "contacts", ListOptions{})
		if err != nil || len(recs) != 1 || recs[0].Version != 1 {
			t.Fatalf("after the refused writes: %d records (%v), first %+v; want the one valid record at version 1", len(recs), err, recs)
		}
	})
}

// unreadBody fails the test when read: the handler must answer from the
// declared Content-Length alone.
type unreadBody struct{ t *testing.T }

func (b unreadBody) Read([]byte) (int, error) {
	b.t.Error("the body was read")
	return 0, io.EOF
}

func TestOversizedDeclaredBodyIsNotRead(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, Config{})
	h := b.svc.Handler()
	for _, method := range []string{"POST", "PATCH"} {
		path := "/api/records/contacts"
		if method == "PATCH" {
			path += "/x"
		}
		req := httptest.NewRequest(method, path, unreadBody{t})
		req.ContentLength = MaxBodyBytes + 1
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 413 || w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s with Content-Length %d = %d (nosniff %q), want 413", method, req.ContentLength, w.Code, w.Header().Get("X-Content-Type-Options"))
		}
	}
}

// TestOversizedStreamedBody: a body with no declared length (chunked) past
// MaxBodyBytes is refused with 413 as it is read, and nothing is written.
func TestOversizedStreamedBody(t *testing.T) {
	t.Parallel()
	b := setup(t, store.SQLite, Config{})
	h := b.svc.Handler()
	email := `{"fields":{"email":"streamed@example.com","first_name":"` + strings.Repeat("x", MaxBodyBytes) + `"}}`
	for _, method := range []string{"POST", "PATCH"} {
		path := "/api/records/contacts"
		if method == "PATCH" {
			path += "/x"
		}
		req := httptest.NewRequest(method, path, io.NopCloser(strings.NewReader(email)))
		req.ContentLength = -1
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 413 || !strings.Contains(w.Body.String(), strconv.Itoa(MaxBodyBytes)) {
			t.Errorf("%s of %d bytes with no declared length = %d %s, want 413 naming the limit", method, len(email), w.Code, w.Body)
		}
	}
	if r := call(t, h, "GET", "/api/records/contacts", ""); r.status != 200 || strings.Contains(fmt.Sprint(r.body), "streamed@") {
		t.Errorf("records after the refused writes = %d %v; want none made", r.status, r.body)
	}
}

// TestTrailingSpaceIDIsNotTheRecord: MariaDB compares 'x' and 'x ' as equal
// (PAD SPACE collations); every database answers an id with a trailing space
// as not found, so a PATCH or DELETE of "x " never reaches record x under
// another spelling of its id (and a queue keyed by that spelling).
func TestTrailingSpaceIDIsNotTheRecord(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		h := b.svc.Handler()
		ok := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"pad@example.com"}}`)
		id := testcheck.As[string](t, "the created record's id", ok.body["id"])
		for _, method := range []string{"GET", "PATCH", "DELETE"} {
			if r := call(t, h, method, "/api/records/contacts/"+id+"%20?version=1", `{"version":1,"fields":{"first_name":"X"}}`); r.status != 404 {
				t.Errorf("%s of the id with a trailing space = %d %v; want 404", method, r.status, r.body)
			}
		}
		if _, err := b.svc.Get(context.Background(), "contacts", id+" "); !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v; want ErrNotFound", id+" ", err)
		}
		if r := call(t, h, "GET", "/api/records/contacts/"+id, ""); r.status != 200 || r.body["version"] != float64(1) {
			t.Errorf("the record after the refused writes = %d %v; want it unchanged at version 1", r.status, r.body)
		}
	})
}

// TestNestingAndSurrogatesAreRefusedAlike: a value nested deeper than
// MaxValueDepth, or a body holding a surrogate escape without its pair
// (which encoding/json would store as U+FFFD), is refused with 400 on every
// database, not a 500 from MariaDB's or SQLite's JSON check nor a record
// holding other text than was sent; MaxValueDepth itself is stored and
// queued on every database.
func TestNestingAndSurrogatesAreRefusedAlike(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		h := b.svc.Handler()
		nested := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
		ok := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"deep@example.com","x":`+nested(MaxValueDepth)+`}}`)
		if ok.status != 201 {
			t.Fatalf("a value nested %d deep = %d %v; want 201", MaxValueDepth, ok.status, ok.body)
		}
		for name, body := range map[string]string{
			"one level deeper":   `{"fields":{"x":` + nested(MaxValueDepth+1) + `}}`,
			"2000 deep":          `{"fields":{"x":` + nested(2000) + `}}`,
			"lone high":          `{"fields":{"name":"Ann\ud800"}}`,
			"lone low":           `{"fields":{"name":"\udc00Ann"}}`,
			"lone high in a key": `{"fields":{"obj":{"\ud83d":1}}}`,
		} {
			if r := call(t, h, "POST", "/api/records/contacts", body); r.status != 400 {
				t.Errorf("%s: %d %v; want 400", name, r.status, r.body)
			}
		}
		if r := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"pair@example.com","name":"Ann \ud83d\ude00"}}`); r.status != 201 {
			t.Errorf("a whole surrogate pair = %d %v; want 201", r.status, r.body)
		}
		deep := any("x")
		for range MaxValueDepth + 1 {
			deep = []any{deep}
		}
		if _, err := b.svc.Insert(context.Background(), "contacts", map[string]any{"x": deep}); !errors.Is(err, ErrInvalid) {
			t.Errorf("Insert of a value nested %d deep = %v; want ErrInvalid", MaxValueDepth+1, err)
		}
	})
}
