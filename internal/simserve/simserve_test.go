package simserve

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
)

func TestListener(t *testing.T) {
	var l Listener
	errClosed := errors.New("closed")
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })
	log := slog.New(slog.DiscardHandler)
	if l.URL() != "" {
		t.Fatalf("URL before Start = %q", l.URL())
	}
	if err := l.Start("127.0.0.1:0", h, "sim", log, errClosed); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Fatalf("served %q", body)
	}
	if err := l.Start("127.0.0.1:0", h, "sim", log, errClosed); err == nil {
		t.Fatal("a second Start succeeded")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(l.URL()); err == nil {
		t.Fatal("served after Close")
	}
	if err := l.Start("127.0.0.1:0", h, "sim", log, errClosed); !errors.Is(err, errClosed) {
		t.Fatalf("Start after Close = %v, want the closed error", err)
	}
}
