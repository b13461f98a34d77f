package dispatch

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hubsync/hubsync/store"
)

// A captured delivery replayed byte for byte (within the signature's
// lifetime) is a no-op: the event is processed once.
func TestReplayedDelivery(t *testing.T) {
	b := setup(t, store.SQLite, options{})
	rec := b.insert(t, "a@example.com")
	id := b.events(t, rec)[0].ID
	first := b.signed([]byte(`{"eventId":"`+id+`"}`), testKey)
	raw, _ := io.ReadAll(first.Body)
	replay := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, WorkerPath, bytes.NewReader(raw))
		r.Header = first.Header.Clone()
		return b.serve(r)
	}
	if w := replay(); w.Code != http.StatusOK {
		t.Fatalf("first: %d %s", w.Code, w.Body)
	}
	calls := b.sim.Counters().Requests
	for range 3 {
		if w := replay(); w.Code != http.StatusOK {
			t.Fatalf("replay: %d %s", w.Code, w.Body)
		}
	}
	if b.sim.Counters().Requests != calls {
		t.Fatal("a replayed delivery called HubSpot")
	}
	if ev := b.event(t, id); ev.Attempt != 1 {
		t.Fatalf("event claimed %d times, want 1", ev.Attempt)
	}
}

// FuzzDeliveryBody: whatever body QStash signs, the endpoint answers with
// one of its documented codes, never 500, and changes no event it does not
// name.
func FuzzDeliveryBody(f *testing.F) {
	for _, s := range []string{`{"eventId":"x"}`, `{}`, `[]`, `null`, `{"eventId":"` + "\x00" + `"}`, `{"eventId":1}`, "\xff", ""} {
		f.Add([]byte(s))
	}
	b := setup(f, store.SQLite, options{})
	rec := b.insert(f, "fuzz@example.com")
	id := b.events(f, rec)[0].ID
	f.Fuzz(func(t *testing.T, body []byte) {
		w := b.serve(b.signed(body, testKey))
		switch w.Code {
		case http.StatusOK, StatusNonRetryable, http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable:
		default:
			t.Fatalf("body %q: answer %d %s", body, w.Code, w.Body)
		}
		if !bytes.Contains(body, []byte(id)) {
			if ev := b.event(t, id); ev.Attempt != 0 {
				t.Fatalf("body %q claimed event %s", body, id)
			}
		}
	})
}
