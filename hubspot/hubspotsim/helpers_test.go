package hubspotsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeClock is an injected clock tests advance by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type bundle struct {
	t      *testing.T
	srv    *Server
	clock  *fakeClock
	client *http.Client
}

// setup starts a simulator with an injected clock; cfg.Now is overwritten.
func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	clock := newFakeClock()
	cfg.Now = clock.Now
	srv := NewTest(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &bundle{t: t, srv: srv, clock: clock, client: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(a.body, &m); err != nil {
		t.Fatalf("decode %d answer %q: %v", a.status, a.body, err)
	}
	return m
}

// do sends an authenticated API request; body may be nil, a string or a value to encode.
func (b *bundle) do(method, path string, body any) answer {
	b.t.Helper()
	return b.doToken(AccessTokenDefault, method, path, body)
}

func (b *bundle) doToken(token, method, path string, body any) answer {
	b.t.Helper()
	a, err := b.try(token, method, path, body)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	return a
}

func (b *bundle) try(token, method, path string, body any) (answer, error) {
	var rd io.Reader
	switch v := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(v)
	default:
		enc, err := json.Marshal(v)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, b.srv.URL()+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: data}, nil
}

func wantStatus(t *testing.T, a answer, status int) {
	t.Helper()
	if a.status != status {
		t.Fatalf("status = %d, want %d; body %s", a.status, status, a.body)
	}
}

func props(p ...string) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(p); i += 2 {
		m[p[i]] = p[i+1]
	}
	return map[string]any{"properties": m}
}
