package qstash

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestPublishSendsTheDocumentedHeaders(t *testing.T) {
	type seen struct {
		path string
		h    http.Header
		body string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.URL.Path, r.Header.Clone(), string(b)}
		w.Write([]byte(`{"messageId":"msg_1","deduplicated":false}`))
	}))
	defer srv.Close()
	c, err := NewClient(Config{URL: srv.URL, Token: "tok"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Publish(context.Background(), Message{
		Destination: "https://w.example.com/qstash/hubspot", Body: []byte(`{"eventId":"e1"}`), DeduplicationID: "e1",
		FlowControl: FlowControl{Key: "k", Rate: 150, Period: 10 * time.Second, Parallelism: 12},
	})
	if err != nil || res.MessageID != "msg_1" {
		t.Fatalf("Publish = %+v, %v", res, err)
	}
	s := <-got
	if s.path != "/v2/publish/https://w.example.com/qstash/hubspot" {
		t.Errorf("path %q", s.path)
	}
	want := map[string]string{
		"Authorization": "Bearer tok", "Upstash-Method": "POST", "Upstash-Retries": "5",
		"Upstash-Deduplication-Id": "e1", "Upstash-Flow-Control-Key": "k",
		"Upstash-Flow-Control-Value": "parallelism=12, rate=150, period=10s", "Content-Type": "application/json",
	}
	for k, v := range want {
		if s.h.Get(k) != v {
			t.Errorf("%s = %q, want %q", k, s.h.Get(k), v)
		}
	}
	if s.body != `{"eventId":"e1"}` {
		t.Errorf("body %q", s.body)
	}
	// 0 is the default; negative is none.
	for retries, want := range map[int]string{3: "3", -1: "0"} {
		if _, err := c.Publish(context.Background(), Message{Destination: "https://w/x", Body: []byte(`{}`), Retries: retries}); err != nil {
			t.Fatal(err)
		}
		if s := <-got; s.h.Get("Upstash-Retries") != want {
			t.Errorf("Retries %d: Upstash-Retries %q, want %q", retries, s.h.Get("Upstash-Retries"), want)
		}
	}
}

func TestPublishErrors(t *testing.T) {
	status := http.StatusUnauthorized
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status == http.StatusOK {
			w.Write([]byte(`not json`))
			return
		}
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(status)
		w.Write([]byte(`{"error":"nope"}`))
	}))
	defer srv.Close()
	c, _ := NewClient(Config{URL: srv.URL, Token: "tok"})
	m := Message{Destination: "https://w/x", Body: []byte(`{}`)}
	var qe *Error
	if _, err := c.Publish(context.Background(), m); !errors.As(err, &qe) || qe.StatusCode != 401 || !qe.Permanent() || qe.Message != "nope" {
		t.Fatalf("401: %v", err)
	}
	status = http.StatusTooManyRequests
	if _, err := c.Publish(context.Background(), m); !errors.As(err, &qe) || qe.Permanent() || qe.RetryAfter != 7*time.Second {
		t.Fatalf("429: %v", err)
	}
	status = http.StatusOK
	if _, err := c.Publish(context.Background(), m); !errors.As(err, &qe) {
		t.Fatalf("bad answer: %v", err)
	}
	srv.Close()
	if _, err := c.Publish(context.Background(), m); !errors.As(err, &qe) || qe.StatusCode != 0 || qe.Permanent() {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestNewClientValidates(t *testing.T) {
	if _, err := NewClient(Config{URL: "nope", Token: "t"}); err == nil {
		t.Fatal("bad URL accepted")
	}
	if _, err := NewClient(Config{URL: "http://x"}); err == nil {
		t.Fatal("empty token accepted")
	}
}

// TestParseRetryAfter: a publish answer's Retry-After is honoured in both of
// its forms and never asks for more than RetryAfterMax, nor for a negative
// wait, whatever the header says.
func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"7", 7 * time.Second},
		{" 7 ", 7 * time.Second},
		{"0", 0},
		{"-5", 0},
		{"3153600000", RetryAfterMax}, // a century
		{"99999999999999999999999", RetryAfterMax}, // past int64
		{"-99999999999999999999999", 0},
		{"soon", 0},
		{"1.5", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.AddDate(1, 0, 0).Format(http.TimeFormat), RetryAfterMax},
	} {
		if got := parseRetryAfter(tc.v, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

// TestPublishRetryAfterCapped: a 429 asking for a century of waiting gives
// the publisher RetryAfterMax to wait.
func TestPublishRetryAfterCapped(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3153600000")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c, _ := NewClient(Config{URL: srv.URL, Token: "tok"})
	var qe *Error
	if _, err := c.Publish(context.Background(), Message{Destination: "https://w/x", Body: []byte(`{}`)}); !errors.As(err, &qe) || qe.RetryAfter != RetryAfterMax {
		t.Fatalf("429 with a century's Retry-After: %v (RetryAfter %v), want %s", err, qe, RetryAfterMax)
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "7", "-1", "3153600000", "99999999999999999999", "Mon, 07 Dec 2026 12:01:30 GMT", "soon"} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		if d := parseRetryAfter(v, now); d < 0 || d > RetryAfterMax {
			t.Fatalf("parseRetryAfter(%q) = %s, outside [0, %s]", v, d, RetryAfterMax)
		}
	})
}
