package records

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testcheck"
	"github.com/hubsync/hubsync/store"
)

type apiResp struct {
	status int
	body   map[string]any
}

func call(t *testing.T, h http.Handler, method, path, body string) apiResp {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	r := apiResp{status: w.Code}
	if w.Code != http.StatusNoContent {
		if ct := w.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: content type %q", method, path, ct)
		}
		if err := json.Unmarshal(w.Body.Bytes(), &r.body); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, w.Body.String(), err)
		}
	}
	return r
}

func TestHTTPFlow(t *testing.T) {
	b := setup(t, store.SQLite, Config{})
	h := b.svc.Handler()
	r := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"a@example.com","age":3}}`)
	if r.status != 201 || r.body["version"] != 1.0 || testcheck.As[map[string]any](t, "POST fields", r.body["fields"])["age"] != 3.0 {
		t.Fatalf("POST = %+v", r)
	}
	id := testcheck.As[string](t, "the created record's id", r.body["id"])
	if r := call(t, h, "GET", "/api/records/contacts/"+id, ""); r.status != 200 || r.body["id"] != id {
		t.Fatalf("GET = %+v", r)
	}
	r = call(t, h, "PATCH", "/api/records/contacts/"+id, `{"version":1,"fields":{"age":null,"name":"Ann"}}`)
	f := testcheck.As[map[string]any](t, "PATCH fields", r.body["fields"])
	if r.status != 200 || r.body["version"] != 2.0 || f["name"] != "Ann" || f["age"] != nil {
		t.Fatalf("PATCH = %+v", r)
	}
	if r := call(t, h, "PATCH", "/api/records/contacts/"+id, `{"version":1,"fields":{"name":"Bob"}}`); r.status != 409 || r.body["current_version"] != 2.0 {
		t.Fatalf("stale PATCH = %+v", r)
	}
	if r := call(t, h, "GET", "/api/records/contacts?limit=1", ""); r.status != 200 || len(testcheck.As[[]any](t, "LIST records", r.body["records"])) != 1 || r.body["next"] != id {
		t.Fatalf("LIST = %+v", r)
	}
	if r := call(t, h, "DELETE", "/api/records/contacts/"+id+"?version=1", ""); r.status != 409 {
		t.Fatalf("stale DELETE = %+v", r)
	}
	if r := call(t, h, "DELETE", "/api/records/contacts/"+id+"?version=2", ""); r.status != 204 {
		t.Fatalf("DELETE = %+v", r)
	}
	if r := call(t, h, "GET", "/api/records/contacts/"+id, ""); r.status != 404 {
		t.Fatalf("GET deleted = %+v", r)
	}
}

// TestHTTPBadInputs runs on every database: text that one of them cannot
// hold (an id or cursor that is not UTF-8, or holds NUL) must be a 4xx there
// too, not a 500 from the store.
func TestHTTPBadInputs(t *testing.T) {
	dbtest.Each(t, testHTTPBadInputs)
}

func testHTTPBadInputs(t *testing.T, d store.Dialect) {
	b := setup(t, d, Config{ObjectTypes: []string{"contacts"}})
	h := b.svc.Handler()
	r := call(t, h, "POST", "/api/records/contacts", `{"fields":{"email":"a@example.com"}}`)
	id := testcheck.As[string](t, "the created record's id", r.body["id"])
	one := "/api/records/contacts/" + id
	huge := `{"fields":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"malformed", "POST", "/api/records/contacts", `{"fields":`, 400},
		{"not an object", "POST", "/api/records/contacts", `[]`, 400},
		{"fields not an object", "POST", "/api/records/contacts", `{"fields":"x"}`, 400},
		{"fields missing", "POST", "/api/records/contacts", `{}`, 400},
		{"fields null", "POST", "/api/records/contacts", `{"fields":null}`, 400},
		{"unknown key", "POST", "/api/records/contacts", `{"fields":{},"id":"x"}`, 400},
		{"trailing data", "POST", "/api/records/contacts", `{"fields":{}} {}`, 400},
		{"empty body", "POST", "/api/records/contacts", ``, 400},
		{"reserved field", "POST", "/api/records/contacts", `{"fields":{"$deleted":1}}`, 400},
		{"oversized", "POST", "/api/records/contacts", huge, 413},
		{"unknown object type", "POST", "/api/records/widgets", `{"fields":{}}`, 404},
		{"invalid object type", "GET", "/api/records/Bad-Type", ``, 400},
		{"version missing", "PATCH", one, `{"fields":{}}`, 400},
		{"version string", "PATCH", one, `{"version":"1","fields":{}}`, 400},
		{"version fraction", "PATCH", one, `{"version":1.5,"fields":{}}`, 400},
		{"version zero", "PATCH", one, `{"version":0,"fields":{}}`, 400},
		{"patch oversized", "PATCH", one, `{"version":1,"fields":{"x":"` + strings.Repeat("a", MaxBodyBytes) + `"}}`, 413},
		{"patch missing", "PATCH", "/api/records/contacts/nope", `{"version":1,"fields":{"a":1}}`, 404},
		{"delete no version", "DELETE", one, ``, 400},
		{"delete bad version", "DELETE", one + "?version=x", ``, 400},
		{"bad limit", "GET", "/api/records/contacts?limit=0", ``, 400},
		{"id not UTF-8", "GET", "/api/records/contacts/%ff", ``, 404},
		{"id with NUL", "GET", "/api/records/contacts/a%00b", ``, 404},
		{"patch id not UTF-8", "PATCH", "/api/records/contacts/%ff", `{"version":1,"fields":{"a":1}}`, 404},
		{"delete id with NUL", "DELETE", "/api/records/contacts/a%00b?version=1", ``, 404},
		{"cursor not UTF-8", "GET", "/api/records/contacts?after=%ff", ``, 400},
		{"wrong method on collection", "PUT", "/api/records/contacts", `{}`, 405},
		{"wrong method on record", "POST", one, `{}`, 405},
	}
	for _, c := range cases {
		r := call(t, h, c.method, c.path, c.body)
		if r.status != c.status {
			t.Errorf("%s: %s %s = %d %v, want %d", c.name, c.method, c.path, r.status, r.body, c.status)
			continue
		}
		if msg, _ := r.body["error"].(string); msg == "" {
			t.Errorf("%s: no error message in %v", c.name, r.body)
		}
	}
	// Nothing was written by any of them.
	if n := b.count(t, "hubsync_record"); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}
	if n := b.count(t, "_System_IntegrationOutbound"); n != 1 {
		t.Fatalf("%d outbound events, want 1", n)
	}
	got, err := b.svc.Get(t.Context(), "contacts", id)
	if err != nil || got.Version != 1 {
		t.Fatalf("record = %+v, %v", got, err)
	}
}

func FuzzDecodeBodies(f *testing.F) {
	for _, s := range []string{
		`{"fields":{"a":1}}`, `{"version":2,"fields":{"a":null,"b":[1,{"c":"d"}]}}`,
		`{"fields":`, `{"version":1e400,"fields":{}}`, `{"version":-1}`, `null`, `{"fields":{}} x`,
		`{"fields":{"a":1},"fields":{"b":2}}`, "{\"fields\":{\"\xff\":1}}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, err := decodeCreate(io.LimitReader(bytes.NewReader(body), MaxBodyBytes))
		if err == nil {
			if fields == nil {
				t.Fatal("accepted a create without fields")
			}
			if _, err := json.Marshal(fields); err != nil {
				t.Fatalf("accepted fields that do not encode: %v", err)
			}
		} else if !errors.Is(err, errBadRequest) {
			t.Fatalf("create error %v is not a bad request", err)
		}
		v, fields, err := decodePatch(bytes.NewReader(body))
		if err == nil {
			if v < 1 || fields == nil {
				t.Fatalf("accepted patch version %d fields %v", v, fields)
			}
			if _, err := json.Marshal(fields); err != nil {
				t.Fatalf("accepted patch fields that do not encode: %v", err)
			}
		} else if !errors.Is(err, errBadRequest) {
			t.Fatalf("patch error %v is not a bad request", err)
		}
	})
}
