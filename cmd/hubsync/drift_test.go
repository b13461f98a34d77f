package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func driftCmd(t *testing.T, sim *hubspotsim.Server, dbURL string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"drift", "-database-url", dbURL, "-hubspot-api-base", sim.URL(), "-hubspot-access-token", hubspotsim.AccessTokenDefault}, args...)
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// `hubsync drift` exits 1 while differences remain, 0 when none do; its
// repairs are enqueued (a running serve applies them).
func TestDriftCommand(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "hubsync.db")
	if code, _, errOut := runCmd(t, baseEnv("HUBSYNC_DATABASE_URL="+dbURL), "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	if code, out, errOut := driftCmd(t, sim, dbURL); code != 0 {
		t.Fatalf("an empty portal and database: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := sim.UserCreate("contacts", map[string]string{"email": "missed@example.com"}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := driftCmd(t, sim, dbURL, "-dry-run", "-json")
	var rep drift.Report
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || rep.Orphans != 1 || !strings.Contains(errOut, "remain") {
		t.Fatalf("dry run with an orphan: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = driftCmd(t, sim, dbURL)
	if code != 0 || !strings.Contains(out, "1 to local") {
		t.Fatalf("repair: exit %d\n%s%s", code, out, errOut)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-policy", "contacts=sometimes"}, "HUBSYNC_DRIFT_POLICY"},
		{[]string{"-budget-share", "0"}, "HUBSYNC_DRIFT_BUDGET_SHARE"},
		{[]string{"-page-size", "51"}, "HUBSYNC_DRIFT_PAGE_SIZE"},
		{[]string{"-object", "tickets"}, "not a mapped object type"},
	} {
		if code, _, errOut := driftCmd(t, sim, dbURL, c.args...); code != 1 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, %q; want 1 naming %s", c.args, code, errOut, c.want)
		}
	}
}

// -max-differences (HUBSYNC_DRIFT_MAX_DIFFERENCES) bounds the differences a
// report lists; the text says how many it left out and how to list them,
// the JSON counts them; a negative limit is refused, naming the setting.
func TestDriftMaxDifferences(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	dbURL := "sqlite:" + filepath.Join(t.TempDir(), "hubsync.db")
	env := func(extra ...string) []string {
		return baseEnv(append([]string{"HUBSYNC_DATABASE_URL=" + dbURL, "HUBSPOT_API_BASE=" + sim.URL(), "HUBSPOT_ACCESS_TOKEN=" + hubspotsim.AccessTokenDefault}, extra...)...)
	}
	if code, _, errOut := runCmd(t, env(), "migrate"); code != 0 {
		t.Fatalf("migrate: %d %s", code, errOut)
	}
	for i := range 3 {
		if _, err := sim.UserCreate("contacts", map[string]string{"email": fmt.Sprintf("missed%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := driftCmd(t, sim, dbURL, "-dry-run", "-max-differences", "1")
	if code != 1 || strings.Count(out, "\n  - contacts [orphan]") != 1 || !strings.Contains(out, "orphans 3") ||
		!strings.Contains(out, "2 more differences are counted above but not listed") || !strings.Contains(out, "-max-differences") {
		t.Fatalf("-max-differences 1 with 3 orphans: exit %d\n%s%s; want 1 listed, 2 said to be left out", code, out, errOut)
	}
	code, out, errOut = runCmd(t, env("HUBSYNC_DRIFT_MAX_DIFFERENCES=2"), "drift", "-dry-run", "-json")
	var rep drift.Report
	if code != 1 || json.Unmarshal([]byte(out), &rep) != nil || len(rep.Differences) != 2 || rep.Omitted != 1 || rep.Orphans != 3 || rep.MaxDifferences != 2 {
		t.Fatalf("HUBSYNC_DRIFT_MAX_DIFFERENCES=2: exit %d\n%s%s; want 2 listed, 1 omitted", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"negative flag", nil, []string{"-max-differences", "-1"}, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES", "-max-differences", "use 1..100000"}},
		{"past the most", nil, []string{"-max-differences", "100001"}, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES", "100001", "use 1..100000"}},
		{"negative variable", []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES=-5"}, nil, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES", "-5", "use 1..100000"}},
		{"not a number", []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES=lots"}, nil, []string{"HUBSYNC_DRIFT_MAX_DIFFERENCES", "not a number"}},
	} {
		code, _, errOut := runCmd(t, env(tc.env...), append([]string{"drift", "-dry-run"}, tc.args...)...)
		if code != 1 {
			t.Errorf("%s: exit %d; want 1", tc.name, code)
		}
		wantNamed(t, tc.name, errOut, tc.want)
	}
}
