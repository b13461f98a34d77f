package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/testwait"
)

func TestServeSettingErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badMapping := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(badMapping, []byte("objects:\n  contacts:\n    fields:\n      score: {property: hs_score, type: integer}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(extra ...string) []string {
		return baseEnv(append([]string{"HUBSYNC_DATABASE_URL=sqlite:" + filepath.Join(dir, "x.db"), "HUBSPOT_ACCESS_TOKEN=t", "HUBSPOT_CLIENT_SECRET=s", "HUBSYNC_ADDR=127.0.0.1:0"}, extra...)...)
	}
	cases := []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"unknown signature version", env("HUBSYNC_WEBHOOK_SIGNATURES=v3,v0"), nil, []string{"HUBSYNC_WEBHOOK_SIGNATURES", `"v0"`}},
		{"empty signature list flag", env(), []string{"-webhook-signatures", ""}, []string{"HUBSYNC_WEBHOOK_SIGNATURES"}},
		{"bad trusted proxy", env("HUBSYNC_TRUSTED_PROXIES=10.0.0.1,proxy.local"), nil, []string{"HUBSYNC_TRUSTED_PROXIES", "proxy.local"}},
		{"invalid mapping file", env("HUBSYNC_MAPPING=" + badMapping), nil, []string{"HUBSYNC_MAPPING", badMapping, "line 4", `unknown type "integer"`}},
		{"missing mapping file", env(), []string{"-mapping", filepath.Join(dir, "none.yaml")}, []string{"HUBSYNC_MAPPING", "none.yaml"}},
		{"short api token", env("HUBSYNC_API_TOKEN=" + testAPIToken + ",too-short"), nil, []string{"HUBSYNC_API_TOKEN", "token 2 of 2", "16 characters"}},
		{"short api token flag", env(), []string{"-api-token", "short"}, []string{"HUBSYNC_API_TOKEN", "16 characters"}},
		{"short admin token", env("HUBSYNC_ADMIN_TOKEN=admin"), nil, []string{"HUBSYNC_ADMIN_TOKEN", "16 characters"}},
		{"call lead past the window", env("HUBSYNC_BUDGET_CALL_LEAD=11s"), nil, []string{"HUBSYNC_BUDGET_CALL_LEAD", "at most 10s"}},
		{"call lead not a duration", env("HUBSYNC_BUDGET_CALL_LEAD=soon"), nil, []string{"HUBSYNC_BUDGET_CALL_LEAD", `"soon"`}},
		{"retry spread past the window", env(), []string{"-budget-retry-spread", "1m"}, []string{"HUBSYNC_BUDGET_RETRY_SPREAD", "at most 10s"}},
		{"fill wait too long", env("HUBSYNC_OUTBOUND_FILL_WAIT=5s"), nil, []string{"HUBSYNC_OUTBOUND_FILL_WAIT", "at most 1s"}},
		{"hold too long", env("HUBSYNC_OUTBOUND_HOLD=20s"), nil, []string{"HUBSYNC_OUTBOUND_HOLD", "at most 10s"}},
		{"hold not a duration", env("HUBSYNC_OUTBOUND_HOLD=-often"), nil, []string{"HUBSYNC_OUTBOUND_HOLD", `"-often" is not a duration`}},
		{"negative call lead", env("HUBSYNC_BUDGET_CALL_LEAD=-1s"), nil, []string{"HUBSYNC_BUDGET_CALL_LEAD", `"-1s" is negative`, "0 or more"}},
		{"negative retention", env("HUBSYNC_OUTBOUND_RETENTION=-5d"), nil, []string{"HUBSYNC_OUTBOUND_RETENTION", `"-5d" is negative`}},
		{"negative retention flag", env(), []string{"-inbound-retention", "-1h"}, []string{"-inbound-retention", `"-1h" is negative`}},
		{"negative subscription retention", env("HUBSYNC_SUBSCRIPTION_RETENTION=-30d"), nil, []string{"HUBSYNC_SUBSCRIPTION_RETENTION", `"-30d" is negative`}},
		{"discarded retention not a duration", env(), []string{"-discarded-retention", "quarterly"}, []string{"-discarded-retention", `"quarterly" is not a duration`}},
		{"outbound concurrency past the bound", env("HUBSYNC_OUTBOUND_CONCURRENCY=17"), nil, []string{"HUBSYNC_OUTBOUND_CONCURRENCY", "use 1..16"}},
		{"apply concurrency past the bound", env("HUBSYNC_SYNC_APPLY_CONCURRENCY=33"), nil, []string{"HUBSYNC_SYNC_APPLY_CONCURRENCY", "use 1..32"}},
		{"apply concurrency not a number", env("HUBSYNC_SYNC_APPLY_CONCURRENCY=many"), nil, []string{"HUBSYNC_SYNC_APPLY_CONCURRENCY", "not a number"}},
		{"negative qstash retries", env("HUBSYNC_QSTASH_RETRIES=-1"), nil, []string{"HUBSYNC_QSTASH_RETRIES", "use 0"}},
		{"secret with a newline", env("HUBSYNC_ADMIN_TOKEN=" + testAPIToken + "\n"), nil, []string{"HUBSYNC_ADMIN_TOKEN", "control character"}},
		{"negative drift max differences", env("HUBSYNC_DRIFT_MAX_DIFFERENCES=-1"), nil, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES is -1", "use 1..100000"}},
		{"drift max differences past the most", env("HUBSYNC_DRIFT_MAX_DIFFERENCES=100001"), nil, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES is 100001", "use 1..100000"}},
		{"negative drift max differences flag", env(), []string{"-drift-max-differences", "-2"}, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES is -2"}},
	}
	for _, tc := range cases {
		code, _, errOut := runCmd(t, tc.env, append([]string{"serve"}, tc.args...)...)
		if code == 0 {
			t.Errorf("%s: serve started", tc.name)
			continue
		}
		wantNamed(t, tc.name, errOut, tc.want)
	}
}

// TestServeNegativeMeansNever starts serve with the two durations whose
// negative values are documented settings (never book ahead; claim at once),
// from the environment and from flags.
func TestServeNegativeMeansNever(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
	}{
		{"environment", []string{"HUBSYNC_OUTBOUND_HOLD=-1s", "HUBSYNC_OUTBOUND_BUDGET_AHEAD=-1ms"}, nil},
		{"flags", nil, []string{"-outbound-hold=-1s", "-outbound-budget-ahead", "-1d"}},
	} {
		dir := t.TempDir()
		env := baseEnv(append([]string{"HUBSYNC_DATABASE_URL=sqlite:" + filepath.Join(dir, "x.db"), "HUBSPOT_CLIENT_SECRET=s"}, tc.env...)...)
		svc := startServe(t, env, append([]string{"-sync-worker=false", "-outbound-worker=false"}, tc.args...)...)
		if code := svc.stop(t); code != 0 {
			t.Fatalf("%s: exit %d\n%s", tc.name, code, svc.logs())
		}
	}
}

// TestServeMappingFile runs serve with a mapping file that maps a property
// the default mapping does not, and sees the outbound worker send it; serve
// also warns that, without HUBSYNC_PUBLIC_URL, signatures cover the Host.
func TestServeMappingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(path, []byte(`objects:
  people:
    hubspot_type: contacts
    webhook_name: contact
    id_property: email
    id_field: email
    fields:
      email: email
      nick: {property: nickname, direction: to_hubspot}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	sim := hubspotsim.NewTest(t, hubspotsim.Config{WebhookRetryBase: 50 * time.Millisecond})
	svc := startServe(t, simEnv(sim, "sqlite:"+filepath.Join(dir, "hubsync.db"), "HUBSYNC_MAPPING="+path))
	testwait.For(t, "the HUBSYNC_PUBLIC_URL warning", func() bool {
		return strings.Contains(svc.logs(), "HUBSYNC_PUBLIC_URL is not set")
	})
	code, body := svc.do(t, "POST", "/api/records/people", testAPIToken, map[string]any{"fields": map[string]any{"email": "nick@example.com", "nick": "Nicky"}})
	if code != http.StatusCreated {
		t.Fatalf("create = %d %s", code, body)
	}
	testwait.For(t, "the mapped property in HubSpot", func() bool {
		o, ok := findContact(sim, "nick@example.com")
		return ok && o.Properties["nickname"] == "Nicky"
	})
}

func TestServeNoPublicURLWarningWithPublicURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	svc := startServe(t, baseEnv("HUBSYNC_DATABASE_URL=sqlite:"+filepath.Join(dir, "x.db"), "HUBSPOT_CLIENT_SECRET=s",
		"HUBSYNC_PUBLIC_URL=https://crm.example.com"), "-sync-worker=false", "-outbound-worker=false")
	if code := svc.stop(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, svc.logs())
	}
	if strings.Contains(svc.logs(), "HUBSYNC_PUBLIC_URL is not set") {
		t.Fatalf("warned although HUBSYNC_PUBLIC_URL is set:\n%s", svc.logs())
	}
}

// TestServeWebhookSignatures checks that serve refuses a v1-only delivery by
// default and accepts it when HUBSYNC_WEBHOOK_SIGNATURES widens the versions.
func TestServeWebhookSignatures(t *testing.T) {
	t.Parallel()
	body := `[{"eventId":1,"portalId":1,"occurredAt":1700000000000,"subscriptionType":"contact.deletion","objectId":1}]`
	for _, tc := range []struct {
		name       string
		signatures string
		want       int
	}{
		{"default", "", http.StatusUnauthorized},
		{"widened", "v3,v1", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := baseEnv("HUBSYNC_DATABASE_URL=sqlite:"+filepath.Join(t.TempDir(), "x.db"), "HUBSPOT_CLIENT_SECRET=s")
			if tc.signatures != "" {
				env = append(env, "HUBSYNC_WEBHOOK_SIGNATURES="+tc.signatures)
			}
			svc := startServe(t, env, "-sync-worker=false", "-outbound-worker=false")
			req, err := http.NewRequest(http.MethodPost, svc.base+"/webhooks/hubspot", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(hubspot.HeaderSignature, hubspot.SignV1("s", []byte(body)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("v1-only delivery = %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}
}

// TestServeOutboundConcurrency: HUBSYNC_OUTBOUND_CONCURRENCY sets how many
// cycles the outbound worker keeps in flight, which serve logs as it starts
// (outbound.ConcurrencyDefault without it).
func TestServeOutboundConcurrency(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "outbound_cycles=3"},
		{[]string{"HUBSYNC_OUTBOUND_CONCURRENCY=1"}, "outbound_cycles=1"},
	} {
		dir := t.TempDir()
		svc := startServe(t, simEnv(sim, "sqlite:"+filepath.Join(dir, "hubsync.db"), tc.env...), "-sync-worker=false")
		testwait.For(t, "serve's start line", func() bool { return strings.Contains(svc.logs(), "hubsync: serving") })
		if logs := svc.logs(); !strings.Contains(logs, tc.want) {
			t.Errorf("with %v, serve's logs do not say %q:\n%s", tc.env, tc.want, logs)
		}
		if code := svc.stop(t); code != 0 {
			t.Fatalf("exit %d\n%s", code, svc.logs())
		}
	}
}

// TestSecretWithLineBreak: every command that reads a secret refuses one
// holding a line break (a trailing newline from a secrets file), naming it,
// before it calls anything; the secret would fail every call as a header.
func TestSecretWithLineBreak(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := baseEnv("HUBSYNC_DATABASE_URL=sqlite:"+filepath.Join(dir, "x.db"), "HUBSPOT_ACCESS_TOKEN=pat-1234\n", "HUBSPOT_API_BASE=http://127.0.0.1:1")
	for _, args := range [][]string{{"drift", "-dry-run"}, {"mapping", "check"}, {"sim", "-addr", "127.0.0.1:0"}, {"serve"}} {
		code, _, errOut := runCmd(t, env, args...)
		if code == 0 || !strings.Contains(errOut, "HUBSPOT_ACCESS_TOKEN") || !strings.Contains(errOut, "line break") {
			t.Errorf("%v with a newline in HUBSPOT_ACCESS_TOKEN: exit %d, stderr %q; want a refusal naming it", args, code, errOut)
		}
	}
}

// TestSimSettingErrors: hubsync sim names the flag and the JSON key at fault,
// and shows the form it wants.
func TestSimSettingErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"fault out of range", nil, []string{"-faults", `{"error500":2}`}, []string{"-faults", "error500 must be a probability"}},
		{"hang without duration", nil, []string{"-faults", `{"hangProbability":0.5}`}, []string{"-faults", "hangProbability needs a hangDuration"}},
		{"faults not JSON", nil, []string{"-faults", `{error500:2}`}, []string{"-faults", `{"error500":0.05`}},
		{"qstash faults not JSON", nil, []string{"-qstash", "-qstash-faults", `drop=1`}, []string{"-qstash-faults", `{"drop":0.05`}},
		{"qstash fault out of range", nil, []string{"-qstash", "-qstash-faults", `{"duplicate":3}`}, []string{"-qstash-faults", "duplicate must be a probability"}},
		{"app id", []string{"HUBSPOT_APP_ID=abc"}, nil, []string{"HUBSPOT_APP_ID", "numeric id"}},
	} {
		code, _, errOut := runCmd(t, baseEnv(tc.env...), append([]string{"sim", "-addr", "127.0.0.1:0"}, tc.args...)...)
		if code == 0 {
			t.Errorf("%s: sim started", tc.name)
		}
		wantNamed(t, tc.name, errOut, tc.want)
	}
}

// wantNamed reports each of want that stderr, the output of a refused
// command, does not name.
func wantNamed(t *testing.T, name, stderr string, want []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s: stderr %q does not name %q", name, stderr, w)
		}
	}
}
