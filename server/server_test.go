package server

import (
	"context"
	"errors"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/mapping"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener and the HTTP client's idle connections
		// outlive a test by design.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
	)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	return startServerOn(t, hubspotsim.NewTest(t, hubspotsim.Config{}), cfg)
}

// startServerOn starts a server of cfg on a free port against sim (the
// HubSpot settings of cfg are sim's), stopped when the test ends.
func startServerOn(t *testing.T, sim *hubspotsim.Server, cfg Config) *Server {
	t.Helper()
	cfg.Addr = "127.0.0.1:0"
	cfg.HubSpotAPIBase = sim.URL()
	cfg.HubSpotAccessToken = hubspotsim.AccessTokenDefault
	cfg.HubSpotClientSecret = hubspotsim.ClientSecretDefault
	cfg.HubSpotAppID = "1000"
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return srv
}

func TestReadyzAndMetrics(t *testing.T) { dbtest.Each(t, testReadyzAndMetrics) }

func testReadyzAndMetrics(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	var logs syncBuffer
	srv := startServer(t, Config{DatabaseURL: db.URL, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	base := "http://" + srv.Addr()

	if code, _ := get(t, base+"/healthz"); code != 200 {
		t.Fatalf("healthz = %d", code)
	}
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("readyz on a migrated database = %d %s", code, body)
	}
	code, body := get(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("metrics = %d", code)
	}
	for _, name := range []string{MetricQueueDepth, MetricOldestPendingAge, MetricStatsUp, MetricHubSpotRateLimited,
		MetricWebhookVerifyFailed, MetricEventsEnqueued, MetricEventsProcessed, MetricEventsFailed, MetricEventsClaimed} {
		if !strings.Contains(body, "# TYPE "+name+" ") {
			t.Errorf("metrics lack %s", name)
		}
	}
	// An unsigned webhook is a verification failure, counted.
	resp, err := http.Post(base+"/webhooks/hubspot", "application/json", strings.NewReader(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("unsigned webhook = %d, want 401", resp.StatusCode)
	}
	if _, body := get(t, base+"/metrics"); !strings.Contains(body, MetricWebhookVerifyFailed+" 1") {
		t.Errorf("verification failure not counted:\n%s", grepLines(body, "webhook"))
	}

	// A schema that falls behind the binary (here: a migration forgotten) makes
	// the replica unready: the anonymous caller gets the status only, the log
	// the reason.
	var last int64
	if err := db.DB.QueryRow("SELECT MAX(version) FROM hubsync_migration").Scan(&last); err != nil {
		t.Fatal(err)
	}
	if _, err := db.DB.Exec(dialectsql.Rebind(d, "DELETE FROM hubsync_migration WHERE version = ?"), last); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "{\n  \"status\": \"not ready\"\n}" {
		t.Fatalf("readyz on an unmigrated database = %d %s, want 503 with the status only", code, body)
	}
	if !strings.Contains(logs.String(), "migrations not current") {
		t.Fatalf("the log does not say why the replica is not ready:\n%s", logs.String())
	}

	// A schema ahead of the binary (a rolling upgrade's migrate ran) keeps
	// the running replica ready, with a warning: otherwise every old
	// replica would leave the load balancer before a new one could start.
	// Not one that also lacks a migration of the binary's (a gap).
	if _, err := db.DB.Exec(dialectsql.Rebind(d, "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (?, ?, ?)"), last+1, "from_a_newer_binary", "2026-12-03T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("readyz on a newer schema with a gap = %d %s, want 503", code, body)
	}
	if _, err := db.DB.Exec(dialectsql.Rebind(d, "INSERT INTO hubsync_migration (version, name, applied_at) VALUES (?, ?, ?)"), last, "back", "2026-12-03T00:00:00Z"); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, base+"/readyz"); code != http.StatusOK {
		t.Fatalf("readyz on a newer schema = %d %s, want 200", code, body)
	}
	if !strings.Contains(logs.String(), "schema is newer than this binary") {
		t.Fatalf("the log does not warn of the newer schema:\n%s", logs.String())
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestRecordReachesHubSpotAndStopIsIdempotent(t *testing.T) {
	dbtest.Each(t, testRecordReachesHubSpotAndStopIsIdempotent)
}

func testRecordReachesHubSpotAndStopIsIdempotent(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	srv, err := New(Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(),
		HubSpotAccessToken: hubspotsim.AccessTokenDefault, DisableWebhooks: true,
		APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	base := "http://" + srv.Addr()
	createContact(t, base, "inproc@example.com")
	testwait.For(t, "the contact in HubSpot", func() bool {
		for _, o := range sim.Objects("contacts") {
			if o.Properties["email"] == "inproc@example.com" {
				return true
			}
		}
		return false
	})
	// Cancelling Start's context stops the server gracefully.
	cancel()
	select {
	case <-srv.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("server did not stop after its context was cancelled")
	}
	if err := srv.Wait(); err != nil {
		t.Fatalf("Wait = %v", err)
	}
	if err := srv.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v", err)
	}
	if err := srv.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestConfigErrorsNameTheSetting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"all missing", Config{}, []string{"HubSpotAccessToken", "HubSpotClientSecret", "DisableWebhooks"}},
		{"bad database", Config{DatabaseURL: "oracle://x", DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true}, []string{"DatabaseURL"}},
		{"bad addr", Config{Addr: "8080", DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true}, []string{"Addr"}},
		{"bad app id", Config{HubSpotAppID: "abc", HubSpotClientSecret: "s", DisableSyncWorker: true, DisableOutboundWorker: true}, []string{"HubSpotAppID"}},
		{"bad public url", Config{PublicURL: "crm.example.com", HubSpotClientSecret: "s", DisableSyncWorker: true, DisableOutboundWorker: true}, []string{"PublicURL"}},
		{"rate limit", Config{RateLimit: -1, HubSpotAccessToken: "t", DisableWebhooks: true}, []string{"RateLimit"}},
		{"budget ahead", Config{OutboundBudgetAhead: time.Minute, HubSpotAccessToken: "t", DisableWebhooks: true}, []string{"OutboundBudgetAhead", "at most 10s"}},
		{"apply concurrency", Config{SyncApplyConcurrency: -1, HubSpotAccessToken: "t", DisableWebhooks: true}, []string{"SyncApplyConcurrency", "use 1..32"}},
		{"outbound concurrency", Config{OutboundConcurrency: 17, HubSpotAccessToken: "t", DisableWebhooks: true}, []string{"OutboundConcurrency", "use 1..16"}},
		{"secrets with line breaks", Config{HubSpotAccessToken: "t\n", HubSpotClientSecret: "s\r\n", AdminToken: strings.Repeat("a", 16) + "\n",
			APITokens: []string{strings.Repeat("b", 16), strings.Repeat("c", 16) + "\n"}, CronSecret: strings.Repeat("d", 16) + "\n"},
			[]string{"HubSpotAccessToken holds a control character", "HubSpotClientSecret holds", "AdminToken holds", "APITokens: token 2 of 2 holds", "CronSecret holds", "remove it"}},
		{"qstash header values", Config{DisableWebhooks: true, DisableSyncWorker: true, Dispatch: DispatchQStash, QStashURL: "http://q", QStashToken: "t\n",
			QStashCurrentSigningKey: "k", QStashNextSigningKey: "n\x00", WorkerURL: "http://w/x", FlowControlKey: "hub\r\nX-Evil: 1"},
			[]string{"QStashToken holds", "QStashNextSigningKey holds", "FlowControlKey holds"}},
	} {
		_, err := New(tc.cfg)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New = %v, want ErrConfig", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not name %s", tc.name, err, w)
			}
		}
		// The library names Config fields; only cmd/hubsync knows the
		// environment.
		if strings.Contains(err.Error(), "HUBSYNC_") || strings.Contains(err.Error(), "HUBSPOT_") {
			t.Errorf("%s: %q names an environment variable, want Config fields only", tc.name, err)
		}
	}
	// Only the parts that need a setting require it.
	if _, err := New(Config{DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true}); err != nil {
		t.Errorf("API-only config: %v", err)
	}
}

// TestConfigMappingDrivesEveryPart checks that Config.Mapping reaches the
// records API (its object types only) and the outbound worker (its fields).
func TestConfigMappingDrivesEveryPart(t *testing.T) { dbtest.Each(t, testConfigMappingDrivesEveryPart) }

func testConfigMappingDrivesEveryPart(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	m, err := mapping.NewSet(mapping.Object{
		ObjectType: "contacts", HubSpotType: "contacts", WebhookName: "contact", Version: 1,
		IDProperty: "email", IDField: "email",
		Fields: []mapping.Field{{Local: "email", HubSpot: "email"}, {Local: "nickname", HubSpot: "firstname"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{
		DatabaseURL: db.URL, Addr: "127.0.0.1:0", HubSpotAPIBase: sim.URL(), Mapping: m,
		HubSpotAccessToken: hubspotsim.AccessTokenDefault, DisableWebhooks: true,
		APITokens: []string{testAPIToken}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(context.Background()) })
	base := "http://" + srv.Addr()
	post := func(path, body string) int {
		resp, err := apiPost(base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("/api/records/deals", `{"fields":{"name":"x"}}`); code != http.StatusNotFound {
		t.Errorf("create a deal, which the mapping lacks = %d, want 404", code)
	}
	if code := post("/api/records/contacts", `{"fields":{"email":"map@example.com","nickname":"Al"}}`); code != http.StatusCreated {
		t.Fatalf("create contact = %d", code)
	}
	testwait.For(t, "the contact in HubSpot with the mapped property", func() bool {
		for _, o := range sim.Objects("contacts") {
			if o.Properties["email"] == "map@example.com" && o.Properties["firstname"] == "Al" {
				return true
			}
		}
		return false
	})
}

// TestSyncApplyConcurrencyDefaults: the SyncWorker applies one record at a
// time by default on SQLite (one writer), the inbound default on PostgreSQL
// and MySQL (whose deadlocks the records service retries), and what it is
// told anywhere.
func TestSyncApplyConcurrencyDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		configured int
		d          store.Dialect
		want       int
	}{
		{0, store.SQLite, 1},
		{3, store.SQLite, 3},
		{0, store.Postgres, 0},
		{0, store.MySQL, 0},
		{2, store.MySQL, 2},
		{8, store.Postgres, 8},
	} {
		if got := syncApplyConcurrency(tc.configured, tc.d); got != tc.want {
			t.Errorf("syncApplyConcurrency(%d, %s) = %d, want %d", tc.configured, tc.d, got, tc.want)
		}
	}
}
