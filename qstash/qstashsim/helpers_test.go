package qstashsim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// received is one request the receiver got.
type received struct {
	Method string
	URL    string // as requested: path and query
	Header http.Header
	Body   []byte
}

// receiver is a real HTTP endpoint that records what arrives, counts
// requests in flight and answers with respond (200 when nil).
type receiver struct {
	t   *testing.T
	srv *httptest.Server

	mu          sync.Mutex
	got         []received
	inFlight    int
	maxInFlight int
	arrivals    []time.Time
	respond     func(w http.ResponseWriter, r *http.Request, n int) // n: 0-based request index
}

func newReceiver(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, n int)) *receiver {
	t.Helper()
	rc := &receiver{t: t, respond: respond}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		n := len(rc.got)
		rc.got = append(rc.got, received{Method: r.Method, URL: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		rc.arrivals = append(rc.arrivals, time.Now())
		rc.inFlight++
		rc.maxInFlight = max(rc.maxInFlight, rc.inFlight)
		respond := rc.respond
		rc.mu.Unlock()
		defer func() {
			rc.mu.Lock()
			rc.inFlight--
			rc.mu.Unlock()
		}()
		if respond != nil {
			respond(w, r, n)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

func (rc *receiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.got)
}

// url is the receiver's address with path.
func (rc *receiver) url(path string) string { return rc.srv.URL + path }

type bundle struct {
	t      *testing.T
	sim    *Server
	clock  *storetest.Clock // the emulator's Now: signature claims, dedup window, Retry-After dates; delivery waits use the wall clock, scaled
	client *http.Client
}

// setup starts an emulator on a fake Now with delays scaled down a
// thousandfold unless cfg says otherwise.
func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	clock := storetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	cfg.Now = clock.Now
	if cfg.DelayScale == 0 {
		cfg.DelayScale = 0.001
	}
	sim := NewTest(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &bundle{t: t, sim: sim, clock: clock, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

// errorText is the "error" of a QStash error answer, failing when the
// answer has another shape.
func (a answer) errorText(t *testing.T) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	a.decode(t, &e)
	if e.Error == "" {
		t.Fatalf("answer %d %s has no error", a.status, a.body)
	}
	return e.Error
}

// do sends a request to the emulator; a header "Authorization" of "-"
// sends none, no Authorization header sends the right token.
func (b *bundle) do(method, path string, body []byte, header map[string]string) answer {
	b.t.Helper()
	req, err := http.NewRequest(method, b.sim.URL()+path, bytes.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.sim.Token())
	for k, v := range header {
		if k == "Authorization" && v == "-" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	rb, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: rb}
}

// publish publishes body to dest and fails unless the answer is 201 or 202.
func (b *bundle) publish(dest, body string, header map[string]string) PublishResponse {
	b.t.Helper()
	a := b.do(http.MethodPost, "/v2/publish/"+dest, []byte(body), header)
	if a.status != http.StatusCreated && a.status != http.StatusAccepted {
		b.t.Fatalf("publish to %s: %d %s", dest, a.status, a.body)
	}
	var pr PublishResponse
	a.decode(b.t, &pr)
	if !strings.HasPrefix(pr.MessageID, "msg_") {
		b.t.Fatalf("messageId %q lacks msg_", pr.MessageID)
	}
	if pr.Deduplicated != (a.status == http.StatusAccepted) {
		b.t.Fatalf("status %d with deduplicated=%v", a.status, pr.Deduplicated)
	}
	return pr
}

// idle waits until no attempt is waiting or in flight.
func (b *bundle) idle() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Deadline)
	defer cancel()
	if err := b.sim.WaitIdle(ctx); err != nil {
		b.t.Fatalf("WaitIdle: %v", err)
	}
}

// info returns a message's state, failing if it is unknown.
func (b *bundle) info(id string) MessageInfo {
	b.t.Helper()
	m, ok := b.sim.MessageInfo(id)
	if !ok {
		b.t.Fatalf("message %s unknown", id)
	}
	return m
}
