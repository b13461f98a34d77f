package server

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestMetricsAddr: with MetricsAddr, /metrics is served there (with
// /healthz, for the scraper's probe) and no longer on Addr, which keeps
// everything else; the second listener stops with the server.
func TestMetricsAddr(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL, MetricsAddr: "127.0.0.1:0"})
	main, metrics := "http://"+srv.Addr(), "http://"+srv.MetricsAddr()
	if srv.MetricsAddr() == "" || srv.MetricsAddr() == srv.Addr() {
		t.Fatalf("MetricsAddr() = %q beside Addr() %q; want a listener of its own", srv.MetricsAddr(), srv.Addr())
	}
	if code, body := get(t, metrics+"/metrics"); code != http.StatusOK || !strings.Contains(body, "hubsync_") {
		t.Fatalf("GET /metrics on MetricsAddr: %d %.200s; want the hubsync metrics", code, body)
	}
	if code, _ := get(t, metrics+"/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz on MetricsAddr: %d; want 200", code)
	}
	if code, _ := get(t, main+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on Addr with a MetricsAddr: %d; want 404", code)
	}
	if code, _ := get(t, main+"/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz on Addr: %d; want 200", code)
	}
	// Only /metrics and /healthz: nothing else of the service is reachable
	// on the scraper's port.
	if code, _ := get(t, metrics+"/readyz"); code != http.StatusNotFound {
		t.Errorf("GET /readyz on MetricsAddr: %d; want 404", code)
	}
	addr := srv.MetricsAddr()
	if err := srv.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("MetricsAddr %s still accepts connections after Stop", addr)
	}
}

// TestMetricsOnAddrByDefault: without MetricsAddr, /metrics is on Addr.
func TestMetricsOnAddrByDefault(t *testing.T) {
	db := dbtest.New(t, store.SQLite)
	srv := startServer(t, Config{DatabaseURL: db.URL})
	if srv.MetricsAddr() != "" {
		t.Errorf("MetricsAddr() = %q without one configured", srv.MetricsAddr())
	}
	if code, body := get(t, "http://"+srv.Addr()+"/metrics"); code != http.StatusOK || !strings.Contains(body, "hubsync_") {
		t.Errorf("GET /metrics on Addr: %d %.200s; want the hubsync metrics", code, body)
	}
}

func TestMetricsAddrConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Addr: "127.0.0.1:8080", MetricsAddr: "9090"}, "MetricsAddr \"9090\" is not host:port"},
		{Config{Addr: "127.0.0.1:8080", MetricsAddr: "127.0.0.1:8080"}, "a port of its own"},
	} {
		_, err := New(tc.cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v; want a config error saying %q", tc.cfg, err, tc.want)
		}
	}
	// A port taken by another listener is named at Start.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	db := dbtest.New(t, store.SQLite)
	srv, err := New(Config{DatabaseURL: db.URL, Addr: "127.0.0.1:0", MetricsAddr: ln.Addr().String(), DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "MetricsAddr") {
		srv.Stop(t.Context())
		t.Fatalf("Start with MetricsAddr taken: %v; want an error naming MetricsAddr", err)
	}
	if a := srv.Addr(); a != "" {
		t.Errorf("Addr() after the failed Start = %q; want none (the main listener is closed)", a)
	}
}
