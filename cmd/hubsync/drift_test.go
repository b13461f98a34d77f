package main

import (
	"bytes"
	"encoding/json"
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
