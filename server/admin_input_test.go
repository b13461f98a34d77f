package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

func TestAdminRejectsOversizedBody(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, testAdminRejectsOversizedBody)
}

func testAdminRejectsOversizedBody(t *testing.T, d store.Dialect) {
	b := setupOps(t, d)
	ids := b.deadOutbound(t, "hubspot", 1)
	if len(ids) != 1 {
		t.Fatalf("%d dead letters, want 1", len(ids))
	}
	srv := adminServer(t, b, "tok")

	// A valid request padded past the limit: nothing may be re-queued.
	huge := `{"direction":"outbound","ids":["` + ids[0] + `"` + strings.Repeat(`,"x"`, adminBodyMax/4) + `]}`
	for _, path := range []string{"/admin/deadletters/retry", "/admin/reconcile"} {
		if code, body := call(t, "POST", srv.URL+path, "tok", huge); code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes = %d %s, want 413", path, len(huge), code, body)
		}
	}
	// The same sent chunked (no declared length): refused while read.
	for _, path := range []string{"/admin/deadletters/retry", "/admin/reconcile"} {
		if code, body := callChunked(t, srv.URL+path, "tok", huge); code != http.StatusRequestEntityTooLarge {
			t.Errorf("POST %s with %d bytes chunked = %d %s, want 413", path, len(huge), code, body)
		}
	}
	code, body := call(t, "GET", srv.URL+"/admin/deadletters?direction=outbound", "tok", "")
	if code != http.StatusOK || !strings.Contains(body, ids[0]) {
		t.Fatalf("after the oversized retry the dead letter must still be listed: %d %s", code, body)
	}
	// A route whose body is optional takes an empty chunked body as none;
	// one whose body is required says it is empty.
	if code, body := callChunked(t, srv.URL+"/admin/reconcile", "tok", ""); code != http.StatusOK {
		t.Errorf("POST /admin/reconcile with an empty chunked body = %d %s, want 200", code, body)
	}
	if code, body := callChunked(t, srv.URL+"/admin/deadletters/retry", "tok", ""); code != http.StatusBadRequest || !strings.Contains(body, "empty") {
		t.Errorf("POST /admin/deadletters/retry with an empty chunked body = %d %s, want 400 naming the empty body", code, body)
	}
}

// callChunked POSTs body with no declared length, as a client streaming its
// body does.
func callChunked(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	return callWith(t, "POST", url, token, io.NopCloser(strings.NewReader(body)))
}

// FuzzAdminRetryBody sends arbitrary bodies to the admin POST routes: the answer
// is always a JSON status of 200, 400 or 413, never a 500 or a panic.
func FuzzAdminRetryBody(f *testing.F) {
	for _, seed := range []string{
		`{"direction":"outbound","ids":["a"]}`,
		`{"direction":"inbound","key":"hubspot","all":true}`,
		`{"direction":"internal","ids":[]}`,
		`{"older_than":"10m"}`,
		`{}`, `[]`, `null`, `{"direction":1}`, `{"ids":["a"]} {}`, "\x00",
	} {
		f.Add(seed)
	}
	b := setupOps(f, store.SQLite)
	srv := adminServer(f, b, "tok")
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/admin/deadletters/retry", "/admin/reconcile"} {
			code, resp := call(t, "POST", srv.URL+path, "tok", body)
			switch code {
			case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			default:
				t.Fatalf("POST %s %q = %d %s; want 200, 400 or 413", path, body, code, resp)
			}
		}
	})
}
