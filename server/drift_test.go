package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/store"
)

func adminDrift(t *testing.T, base, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/admin/drift", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// POST /admin/drift: behind the admin token, refuses bad input with 400/413,
// a dry run reports and changes nothing, a run repairs through the queue,
// and /metrics carries the figures.
func TestAdminDrift(t *testing.T) { dbtest.Each(t, testAdminDrift) }

func testAdminDrift(t *testing.T, d store.Dialect) {
	db := dbtest.Migrated(t, d)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{AppID: 1000})
	srv := startServerOn(t, sim, Config{
		DatabaseURL: db.URL, DisableWebhooks: true,
		APITokens: []string{testAPIToken}, AdminToken: testAdminToken,
	})
	base := "http://" + srv.Addr()

	for _, c := range []struct {
		token, body string
		want        int
	}{
		{"", `{}`, http.StatusUnauthorized},
		{testAPIToken, `{}`, http.StatusUnauthorized}, // the API token is not the admin token
		{testAdminToken, `{"dry_run":`, http.StatusBadRequest},
		{testAdminToken, `{"dry_run":true,"unknown":1}`, http.StatusBadRequest},
		{testAdminToken, `{"dry_run":"yes"}`, http.StatusBadRequest},
		{testAdminToken, `{"objects":["tickets"]}`, http.StatusBadRequest},
		{testAdminToken, `{"policies":{"contacts":"always"}}`, http.StatusBadRequest},
		{testAdminToken, `{"policies":{"nope":"local_wins"}}`, http.StatusBadRequest},
		{testAdminToken, `{} {}`, http.StatusBadRequest},
		{testAdminToken, `{"objects":["` + strings.Repeat("x", 2<<20) + `"]}`, http.StatusRequestEntityTooLarge},
	} {
		if code, body := adminDrift(t, base, c.token, c.body); code != c.want {
			t.Errorf("POST /admin/drift %.60q with token %q = %d %s; want %d", c.body, c.token, code, body, c.want)
		}
	}

	resp, err := apiPost(base+"/api/records/contacts", strings.NewReader(`{"fields":{"email":"drift@example.com","first_name":"Ada"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var hid string
	testwait.For(t, "the contact in HubSpot", func() bool {
		for _, o := range sim.Objects("contacts") {
			if o.Properties["email"] == "drift@example.com" && o.Properties["firstname"] == "Ada" {
				hid = o.ID
				return true
			}
		}
		return false
	})
	testwait.For(t, "the outbound queue to settle", func() bool {
		var open int
		err := db.DB.QueryRow("SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE Status <> 'processed'").Scan(&open)
		return err == nil && open == 0
	})
	// A HubSpot edit without a webhook (the receiver is off here).
	if err := sim.UserUpdate("contacts", hid, map[string]string{"firstname": "Grace"}); err != nil {
		t.Fatal(err)
	}
	code, body := adminDrift(t, base, testAdminToken, `{"dry_run":true,"objects":["contacts"]}`)
	var rep drift.Report
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil {
		t.Fatalf("dry run = %d %s", code, body)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].Repaired || rep.Remaining != 1 || !rep.DryRun {
		t.Fatalf("dry run report = %s", body)
	}
	code, body = adminDrift(t, base, testAdminToken, `{"policies":{"contacts":"report"}}`)
	rep = drift.Report{}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil || rep.Repaired[drift.ToLocal] != 1 {
		t.Fatalf("repair = %d %s", code, body)
	}
	testwait.For(t, "the repair applied by the SyncWorker", func() bool {
		var rec struct {
			Fields map[string]any `json:"fields"`
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/api/records/contacts", nil)
		req.Header.Set("Authorization", "Bearer "+testAPIToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var list struct {
			Records []json.RawMessage `json:"records"`
		}
		if json.NewDecoder(resp.Body).Decode(&list) != nil || len(list.Records) != 1 {
			return false
		}
		return json.Unmarshal(list.Records[0], &rec) == nil && rec.Fields["first_name"] == "Grace"
	})
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		MetricDriftRuns + `{mode="dry_run",outcome="complete"} 1`,
		MetricDriftRuns + `{mode="repair",outcome="complete"} 1`,
		MetricDriftRepaired + `{direction="to_local"} 1`,
		MetricDriftDifferences + `{field="firstname",object="contacts",verdict="hubspot_newer"} 2`,
		MetricDriftScanned + `{object="contacts"}`,
		MetricDriftRemaining + " 0",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "hubsync_drift"))
		}
	}
}

// Drift.Interval and BudgetShare are checked, naming the field.
func TestDriftConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  DriftConfig
		want string
	}{
		{DriftConfig{Interval: time.Millisecond}, "Drift.Interval"},
		{DriftConfig{BudgetShare: 1.5}, "Drift.BudgetShare"},
		{DriftConfig{PageSize: 500}, "Drift.PageSize"},
		{DriftConfig{Policy: "always"}, "Drift.Policy"},
		{DriftConfig{MaxDifferences: -1}, "Drift.MaxDifferences is -1; use 1..100000"},
		{DriftConfig{MaxDifferences: 100001}, "Drift.MaxDifferences is 100001; use 1..100000"},
	} {
		err := Config{Drift: c.cfg, DisableWebhooks: true, DisableSyncWorker: true, DisableOutboundWorker: true}.WithDefaults().Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v; want an error naming %s", c.cfg, err, c.want)
		}
	}
}

// With Drift.Interval the server scans on its own and repairs what it finds.
func TestScheduledDrift(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{AppID: 1000})
	id, err := sim.UserCreate("contacts", map[string]string{"email": "scheduled@example.com", "firstname": "Sched"})
	if err != nil {
		t.Fatal(err)
	}
	srv := startServerOn(t, sim, Config{
		DatabaseURL: db.URL, DisableWebhooks: true,
		Drift: DriftConfig{Interval: time.Second},
	})
	// The contact was made in HubSpot with no webhook: only the scheduled
	// scan can find it (an orphan) and have the SyncWorker create it here.
	testwait.For(t, "the scheduled scan to bring the HubSpot contact here", func() bool {
		var n int
		err := db.DB.QueryRow("SELECT COUNT(*) FROM hubsync_link WHERE ObjectType = 'contacts' AND ExternalID = ?", id).Scan(&n)
		return err == nil && n == 1
	})
	_, metrics := get(t, "http://"+srv.Addr()+"/metrics")
	if !strings.Contains(metrics, MetricDriftOrphans+`{object="contacts"} 1`) {
		t.Errorf("metrics lack the orphan:\n%s", grepLines(metrics, "hubsync_drift"))
	}
}

// A report lists at most Drift.MaxDifferences (or the request's
// max_differences), but /metrics counts every difference the scan found,
// those left out of the list too.
func TestDriftMetricsCountOmittedDifferences(t *testing.T) {
	db := dbtest.Migrated(t, store.SQLite)
	sim := hubspotsim.NewTest(t, hubspotsim.Config{AppID: 1000})
	// Orphans: two companies whose hubsync_record_id names no record
	// (ambiguous), scanned first, then two contacts made in HubSpot.
	for i := range 2 {
		if _, err := sim.UserCreate("companies", map[string]string{"name": fmt.Sprint("Gone ", i), "hubsync_record_id": fmt.Sprintf("0190a0a0-0000-7000-8000-00000000000%d", i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.UserCreate("contacts", map[string]string{"email": fmt.Sprintf("missed%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	srv := startServerOn(t, sim, Config{
		DatabaseURL: db.URL, DisableWebhooks: true,
		AdminToken: testAdminToken,
		Drift:      DriftConfig{MaxDifferences: 1},
	})
	base := "http://" + srv.Addr()

	code, body := adminDrift(t, base, testAdminToken, `{"dry_run":true}`)
	var rep drift.Report
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil {
		t.Fatalf("dry run = %d %s", code, body)
	}
	if len(rep.Differences) != 1 || rep.Omitted != 3 || rep.MaxDifferences != 1 || rep.Orphans != 4 || rep.Ambiguous != 2 {
		t.Fatalf("dry run with Drift.MaxDifferences 1 = %s; want 1 listed, 3 omitted, 4 orphans, 2 ambiguous", body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		MetricDriftDifferences + `{field="[orphan]",object="companies",verdict="ambiguous"} 2`,
		MetricDriftDifferences + `{field="[orphan]",object="contacts",verdict="hubspot_newer"} 2`,
		MetricDriftAmbiguous + `{object="companies"} 2`,
		MetricDriftOrphans + `{object="companies"} 2`,
		MetricDriftOrphans + `{object="contacts"} 2`,
		MetricDriftRemaining + " 4",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "hubsync_drift"))
		}
	}

	// The request's max_differences wins for its scan; a negative one is refused.
	code, body = adminDrift(t, base, testAdminToken, `{"dry_run":true,"max_differences":10}`)
	rep = drift.Report{}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &rep) != nil || len(rep.Differences) != 4 || rep.Omitted != 0 || rep.MaxDifferences != 10 {
		t.Fatalf("dry run with max_differences 10 = %d %s; want all 4 listed", code, body)
	}
	for _, n := range []string{"-1", "100001"} {
		if code, body := adminDrift(t, base, testAdminToken, `{"max_differences":`+n+`}`); code != http.StatusBadRequest || !strings.Contains(body, "max_differences") || !strings.Contains(body, "1..100000") {
			t.Fatalf("max_differences %s = %d %s; want 400 naming it and the range", n, code, body)
		}
	}
}
