package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testwait"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

// binary is the hubsync binary built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hubsync-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "hubsync")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build hubsync: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// baseEnv is an environment with nothing of the caller's hubsync settings.
func baseEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HUBSYNC_") && !strings.HasPrefix(kv, "HUBSPOT_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runCmd runs hubsync to completion and returns its exit code and output.
func runCmd(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testwait.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run hubsync %v: %v", args, err)
	}
	return code, stdout.String(), stderr.String()
}

// service is a running `hubsync serve` subprocess.
type service struct {
	cmd    *exec.Cmd
	base   string
	mu     sync.Mutex
	stderr bytes.Buffer
	exited chan struct{}
	err    error
}

func (s *service) logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

type lockedWriter struct{ s *service }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.stderr.Write(p)
}

// startServe starts `hubsync serve` on a free port and waits until it serves.
func startServe(t *testing.T, env []string, args ...string) *service {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(env, "HUBSYNC_ADDR=127.0.0.1:0")
	cmd.Dir = t.TempDir()
	s := &service{cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = lockedWriter{s}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "hubsync serving on "); ok {
				addr <- a
			}
		}
		io.Copy(io.Discard, out)
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(testwait.Deadline):
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("serve logs:\n%s", s.logs())
		}
	})
	select {
	case s.base = <-addr:
	case <-s.exited:
		t.Fatalf("serve exited before serving: %v\n%s", s.err, s.logs())
	case <-time.After(testwait.Deadline):
		t.Fatalf("serve did not start:\n%s", s.logs())
	}
	return s
}

// stop sends SIGTERM and returns the exit code.
func (s *service) stop(t *testing.T) int {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	case <-time.After(testwait.Deadline):
		t.Fatalf("serve did not exit after SIGTERM:\n%s", s.logs())
	}
	return s.cmd.ProcessState.ExitCode()
}

func (s *service) do(t *testing.T, method, path, token string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

type recordJSON struct {
	ID      string         `json:"id"`
	Version int64          `json:"version"`
	Fields  map[string]any `json:"fields"`
}

// testAPIToken is the records API token simEnv configures.
const testAPIToken = "e2e-api-token-0123456789"

func simEnv(sim *hubspotsim.Server, dbURL string, extra ...string) []string {
	return baseEnv(append([]string{
		"HUBSYNC_DATABASE_URL=" + dbURL,
		"HUBSPOT_API_BASE=" + sim.URL(),
		"HUBSPOT_ACCESS_TOKEN=" + hubspotsim.AccessTokenDefault,
		"HUBSPOT_CLIENT_SECRET=" + hubspotsim.ClientSecretDefault,
		"HUBSPOT_APP_ID=1000",
		"HUBSYNC_API_TOKEN=" + testAPIToken,
	}, extra...)...)
}

func findContact(sim *hubspotsim.Server, email string) (hubspotsim.Object, bool) {
	for _, o := range sim.Objects("contacts") {
		if o.Properties["email"] == email && !o.Archived {
			return o, true
		}
	}
	return hubspotsim.Object{}, false
}

// twoWay creates a record through the API, waits for it in the simulator,
// edits it there as a HubSpot user, and waits for the edit to arrive locally
// through a signed webhook.
func twoWay(t *testing.T, dbURL string) {
	sim := hubspotsim.NewTest(t, hubspotsim.Config{WebhookRetryBase: 50 * time.Millisecond})
	svc := startServe(t, simEnv(sim, dbURL, "HUBSYNC_ADMIN_TOKEN=e2e-admin-token-0123456789"))
	if err := sim.SetWebhookURL(svc.base + "/webhooks/hubspot"); err != nil {
		t.Fatal(err)
	}

	code, body := svc.do(t, "POST", "/api/records/contacts", testAPIToken, map[string]any{"fields": map[string]any{"email": "ada@example.com", "first_name": "Ada"}})
	if code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, body)
	}
	if code, _ := svc.do(t, "GET", "/api/records/contacts", "", nil); code != http.StatusUnauthorized {
		t.Errorf("records API without a token = %d, want 401", code)
	}
	var rec recordJSON
	if err := json.Unmarshal(body, &rec); err != nil {
		t.Fatal(err)
	}
	var remote hubspotsim.Object
	testwait.For(t, "the contact in HubSpot", func() bool {
		o, ok := findContact(sim, "ada@example.com")
		remote = o
		return ok && o.Properties["firstname"] == "Ada"
	})

	// The create settles first (completed, its write recorded): a HubSpot
	// edit made while a write of the record is in flight, or before hubsync
	// records that HubSpot accepted it, may have been overwritten by it, and
	// is sent back (README, "The last write wins"); this one comes after.
	testwait.For(t, "the create to be recorded", func() bool {
		code, body := svc.do(t, "GET", "/admin/metrics", "e2e-admin-token-0123456789", nil)
		var m struct {
			Queues []struct {
				Direction string
				Counts    map[string]int64
			}
		}
		if code != 200 || json.Unmarshal(body, &m) != nil {
			return false
		}
		for _, q := range m.Queues {
			if q.Direction == "outbound" {
				return q.Counts["processed"] == 1 && q.Counts["pending"]+q.Counts["processing"] == 0
			}
		}
		return false
	})
	if err := sim.UserUpdate("contacts", remote.ID, map[string]string{"firstname": "Augusta"}); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the HubSpot edit in the local record", func() bool {
		code, body := svc.do(t, "GET", "/api/records/contacts/"+rec.ID, testAPIToken, nil)
		var got recordJSON
		return code == 200 && json.Unmarshal(body, &got) == nil && got.Fields["first_name"] == "Augusta"
	})
	// No loop: the applied edit is not written back to HubSpot as a new change.
	testwait.For(t, "the queues to drain", func() bool {
		code, body := svc.do(t, "GET", "/admin/metrics", "e2e-admin-token-0123456789", nil)
		var m struct{ Pending, DeadLetters int64 }
		return code == 200 && json.Unmarshal(body, &m) == nil && m.Pending == 0 && m.DeadLetters == 0
	})
	if o, _ := findContact(sim, "ada@example.com"); o.Properties["firstname"] != "Augusta" {
		t.Fatalf("HubSpot firstname = %q after the round trip", o.Properties["firstname"])
	}

	// Admin API: a wrong token is refused, the right one answers.
	if code, _ := svc.do(t, "GET", "/admin/metrics", "wrong", nil); code != http.StatusUnauthorized {
		t.Errorf("wrong admin token = %d, want 401", code)
	}
	if code, body := svc.do(t, "GET", "/admin/deadletters?direction=outbound&key=hubspot", "e2e-admin-token-0123456789", nil); code != 200 {
		t.Errorf("deadletters = %d %s", code, body)
	}
	code, body = svc.do(t, "GET", "/metrics", "", nil)
	if code != 200 || !strings.Contains(string(body), `hubsync_events_processed_total{direction="outbound",key="hubspot"} 1`) {
		t.Errorf("metrics = %d\n%s", code, body)
	}

	if code := svc.stop(t); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d\n%s", code, svc.logs())
	}
	code, out, errOut := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+dbURL), "status")
	if code != 0 || !strings.Contains(out, "outbound") || !strings.Contains(out, "0 dead letters") || !strings.Contains(out, "IN WINDOW") {
		t.Fatalf("status = %d\n%s%s", code, out, errOut)
	}
}

func TestServeTwoWaySQLite(t *testing.T) {
	t.Parallel()
	twoWay(t, "sqlite:"+filepath.Join(t.TempDir(), "hubsync.db"))
}

func TestServeTwoWayPostgres(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, store.Postgres)
	code, out, errOut := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+db.URL), "migrate")
	if code != 0 || !strings.Contains(out, "applied migration 001") {
		t.Fatalf("migrate = %d\n%s%s", code, out, errOut)
	}
	twoWay(t, db.URL)
}

func TestServeConfigErrors(t *testing.T) {
	t.Parallel()
	sqlite := "HUBSYNC_DATABASE_URL=sqlite:" + filepath.Join(t.TempDir(), "x.db")
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"missing access token", baseEnv(sqlite, "HUBSPOT_CLIENT_SECRET=s"), nil, "HUBSPOT_ACCESS_TOKEN is empty"},
		{"missing client secret", baseEnv(sqlite, "HUBSPOT_ACCESS_TOKEN=t"), nil, "HUBSPOT_CLIENT_SECRET is empty"},
		{"bad database URL", baseEnv("HUBSYNC_DATABASE_URL=oracle://db", "HUBSPOT_ACCESS_TOKEN=t", "HUBSPOT_CLIENT_SECRET=s"), nil, "HUBSYNC_DATABASE_URL"},
		{"bad rate limit", baseEnv(sqlite, "HUBSYNC_HUBSPOT_RATE_LIMIT=lots"), nil, "HUBSYNC_HUBSPOT_RATE_LIMIT"},
		{"bad time zone", baseEnv(sqlite, "HUBSPOT_ACCESS_TOKEN=t", "HUBSPOT_CLIENT_SECRET=s", "HUBSYNC_HUBSPOT_TIME_ZONE=Mars/Olympus"), nil, "HUBSYNC_HUBSPOT_TIME_ZONE"},
		{"bad retention", baseEnv(sqlite), []string{"-webhooks=false", "-sync-worker=false", "-outbound-worker=false", "-inbound-retention=forever"}, "inbound-retention"},
	}
	for _, tc := range cases {
		code, _, errOut := runCmd(t, append(tc.env, "HUBSYNC_ADDR=127.0.0.1:0"), append([]string{"serve"}, tc.args...)...)
		if code == 0 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want non-zero naming %q", tc.name, code, errOut, tc.want)
		}
	}
}

func TestServeRefusesUnmigratedPostgres(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, store.Postgres)
	env := baseEnv("HUBSYNC_DATABASE_URL="+db.URL, "HUBSPOT_ACCESS_TOKEN=t", "HUBSPOT_CLIENT_SECRET=s", "HUBSYNC_ADDR=127.0.0.1:0")
	code, _, errOut := runCmd(t, env, "serve")
	if code == 0 || !strings.Contains(errOut, "run `hubsync migrate`") || !strings.Contains(errOut, "HUBSYNC_DATABASE_URL") {
		t.Fatalf("serve on an unmigrated PostgreSQL: exit %d, stderr %q; want a refusal telling to run hubsync migrate", code, errOut)
	}
}

// countStatus counts the rows of every queue of a SQLite database in one status.
func countStatus(t *testing.T, dbURL string, status store.Status) int {
	t.Helper()
	db := dbtest.Open(t, dbURL)
	total := 0
	for _, table := range []string{"_System_IntegrationInbound", "_System_IntegrationOutbound", "_System_OutboxEvent"} {
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM "+table+" WHERE Status = ?", string(status)).Scan(&n); err != nil {
			t.Fatalf("count %s rows of %s: %v", status, table, err)
		}
		total += n
	}
	db.Close()
	return total
}

// TestServeDrainsOnSIGTERM stops serve while the outbound worker holds leases:
// with a slow HubSpot the in-flight batch finishes; with a hanging one the drain
// deadline passes and the batch is released. Either way the process exits 0 and
// leaves no event in processing.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults hubspotsim.Faults
		args   []string
		after  store.Status // where the leased events must end
	}{
		{"finish", hubspotsim.Faults{Latency: 1500 * time.Millisecond}, nil, store.StatusProcessed},
		{"release", hubspotsim.Faults{HangProbability: 1, HangDuration: 10 * time.Minute}, []string{"-drain-timeout=500ms"}, store.StatusPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sim := hubspotsim.NewTest(t, hubspotsim.Config{Faults: tc.faults})
			dbURL := "sqlite:" + filepath.Join(t.TempDir(), "hubsync.db")
			svc := startServe(t, simEnv(sim, dbURL), append([]string{"-webhooks=false"}, tc.args...)...)
			for i := range 3 {
				code, body := svc.do(t, "POST", "/api/records/contacts", testAPIToken, map[string]any{"fields": map[string]any{"email": fmt.Sprintf("c%d@example.com", i)}})
				if code != http.StatusCreated {
					t.Fatalf("create = %d %s", code, body)
				}
			}
			testwait.For(t, "an outbound lease", func() bool { return countStatus(t, dbURL, store.StatusProcessing) > 0 })
			// No HUBSYNC_ADMIN_TOKEN: the admin API does not exist.
			if code, _ := svc.do(t, "GET", "/admin/metrics", "anything", nil); code != http.StatusNotFound {
				t.Errorf("admin API without a configured token = %d, want 404", code)
			}

			if code := svc.stop(t); code != 0 {
				t.Fatalf("exit code after SIGTERM = %d\n%s", code, svc.logs())
			}
			if n := countStatus(t, dbURL, store.StatusProcessing); n != 0 {
				t.Fatalf("%d events left in processing after a graceful stop\n%s", n, svc.logs())
			}
			db := dbtest.Open(t, dbURL)
			var n int
			if err := db.QueryRow("SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status = ?", string(tc.after)).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				t.Fatalf("no outbound event ended %s\n%s", tc.after, svc.logs())
			}
			if os.Getenv("HUBSYNC_TEST_LOGS") != "" {
				t.Logf("serve logs:\n%s", svc.logs())
			}
		})
	}
}

// TestServeSecondSignalAborts: while serve drains (a batch hangs in HubSpot and
// the drain timeout is long), a second SIGTERM ends the process at once with
// status 130 instead of waiting for the drain.
func TestServeSecondSignalAborts(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{Faults: hubspotsim.Faults{HangProbability: 1, HangDuration: 10 * time.Minute}})
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "hubsync.db")
	svc := startServe(t, simEnv(sim, dbURL), "-webhooks=false", "-drain-timeout=10m")
	if code, body := svc.do(t, "POST", "/api/records/contacts", testAPIToken, map[string]any{"fields": map[string]any{"email": "abort@example.com"}}); code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, body)
	}
	testwait.For(t, "an outbound lease", func() bool { return countStatus(t, dbURL, store.StatusProcessing) > 0 })

	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, "the graceful stop to begin", func() bool { return strings.Contains(svc.logs(), "stopping gracefully") })
	if err := svc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-svc.exited:
	case <-time.After(testwait.Deadline):
		t.Fatalf("serve did not exit after the second SIGTERM:\n%s", svc.logs())
	}
	if code := svc.cmd.ProcessState.ExitCode(); code != 130 {
		t.Fatalf("exit code after a second SIGTERM = %d, want 130 (aborted)\n%s", code, svc.logs())
	}
}

func TestServeTwoWayMySQL(t *testing.T) {
	t.Parallel()
	db := dbtest.New(t, store.MySQL)
	if code, out, errOut := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+db.URL), "migrate"); code != 0 {
		t.Fatalf("migrate = %d\n%s%s", code, out, errOut)
	}
	twoWay(t, db.URL)
}

func TestDLQAndCleanupCommands(t *testing.T) {
	t.Parallel()
	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		p, _ := outbox.Snapshot{ID: fmt.Sprint(i), Fields: map[string]any{}}.Marshal()
		if _, err := st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: fmt.Sprint(i), EventType: store.EventCreate, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot"})
	if err != nil || len(evs) != 3 {
		t.Fatalf("claim: %d, %v", len(evs), err)
	}
	for _, e := range evs {
		if err := st.Outbound().Fail(ctx, e.Lease(), "VALIDATION_ERROR: bad email"); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	env := baseEnv("HUBSYNC_DATABASE_URL=" + db.URL)

	code, out, errOut := runCmd(t, env, "dlq", "list", "-direction", "outbound", "-key", "hubspot")
	if code != 0 || !strings.Contains(out, ids[0]) || !strings.Contains(out, "VALIDATION_ERROR: bad email") {
		t.Fatalf("dlq list = %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runCmd(t, env, "dlq", "retry", "-direction", "outbound", "-id", ids[0]); code != 0 || !strings.Contains(out, "re-queued 1") {
		t.Fatalf("dlq retry -id = %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut = runCmd(t, env, "dlq", "retry", "-direction", "outbound", "-all"); code == 0 || !strings.Contains(errOut, "key") {
		t.Fatalf("dlq retry -all without -key = %d\n%s%s; want a refusal naming the key", code, out, errOut)
	}
	if code, out, errOut = runCmd(t, env, "dlq", "retry", "-direction", "outbound", "-key", "hubspot", "-all"); code != 0 || !strings.Contains(out, "re-queued 2") {
		t.Fatalf("dlq retry -all = %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCmd(t, env, "status", "-json")
	var rep struct{ Pending, DeadLetters int64 }
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || rep.Pending != 3 || rep.DeadLetters != 0 {
		t.Fatalf("status -json = %d\n%s%s", code, out, errOut)
	}
	rejected, err := inbound.NewRejectedLog(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := rejected.RecordRejected(ctx, []inbound.RejectedEvent{{Reason: inbound.EventRejectMalformed, Message: "event 0: objectId: required", RawPayload: `{}`, ReceivedAt: time.Now().Add(-60 * 24 * time.Hour)}}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut = runCmd(t, env, "cleanup", "-outbound-retention", "1h", "-batch-size", "10"); code != 0 || !strings.Contains(out, "outbound 0") || !strings.Contains(out, "refused webhook events 1") {
		t.Fatalf("cleanup = %d\n%s%s", code, out, errOut)
	}
	// Operator commands never migrate: on an empty database they say what to run.
	empty := dbtest.New(t, store.SQLite)
	if code, _, errOut = runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+empty.URL), "status"); code == 0 || !strings.Contains(errOut, "hubsync migrate") {
		t.Fatalf("status on an empty database = %d %q", code, errOut)
	}
}

func TestSimCommand(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "sim", "-addr", "127.0.0.1:0", "-rate-limit", "50", "-faults", `{"error500":0.1}`)
	cmd.Env = baseEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	url := ""
	for url == "" && sc.Scan() {
		url, _ = strings.CutPrefix(sc.Text(), "hubspot simulator listening on ")
	}
	if url == "" {
		t.Fatal("sim printed no URL")
	}
	go io.Copy(io.Discard, out)
	resp, err := http.Get(url + "/_sim/faults")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"error500": 0.1`) && !strings.Contains(string(b), `"error500":0.1`) {
		t.Fatalf("faults = %d %s", resp.StatusCode, b)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("sim after SIGTERM: %v", err)
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"30d", "12h", "90m", "1h30m", "d", "-1d", "99999999999999d", "", "1.5d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDuration(s)
		if err == nil && d < 0 {
			t.Fatalf("parseDuration(%q) = %s, negative without an error", s, d)
		}
		// The signed parse differs only in taking negative values.
		sd, serr := parseSignedDuration(s)
		switch {
		case err == nil && (serr != nil || sd != d):
			t.Fatalf("parseSignedDuration(%q) = %s, %v; parseDuration gave %s", s, sd, serr, d)
		case err != nil && serr == nil && sd >= 0:
			t.Fatalf("parseDuration(%q) refused (%v) what parseSignedDuration takes as %s", s, err, sd)
		}
	})
}
