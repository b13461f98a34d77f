package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hubsync/hubsync/drift"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// DriftPhase is the drift part of the demo: after the run, drift is made on
// purpose (webhooks dropped, HubSpot edited with webhooks paused, a local
// row changed behind the API's back), POST /admin/drift must find exactly
// that, its repairs (through the queues) must settle, and a last scan must
// find nothing.
type DriftPhase struct {
	// Made lists the drift made, one line each, as "object key verdict".
	Made []string
	// Found is the first (dry-run) report; Repair the repairing one; After
	// the scan once the repairs settled.
	Found, Repair, After *drift.Report
	// Problem says what went wrong ("" when all held).
	Problem string
	// Elapsed is the phase's wall time; Calls the HubSpot calls its scans made.
	Elapsed time.Duration
	Calls   int
}

// OK reports whether the scan found exactly what was made and the repairs
// left no difference.
func (p *DriftPhase) OK() bool { return p != nil && p.Problem == "" }

func (p *DriftPhase) write(pf func(string, ...any)) {
	pf("")
	pf("drift detection and repair (made on purpose after the run; %s, %d HubSpot calls by the scans):", p.Elapsed.Round(100*time.Millisecond), p.Calls)
	for _, m := range p.Made {
		pf("  made:  %s", m)
	}
	if p.Found != nil {
		pf("  found (dry run): %d differences, %d records scanned", p.Found.Found(), sum(p.Found.Scanned))
		for _, d := range p.Found.Differences {
			pf("    - %s", d)
		}
	}
	if p.Repair != nil {
		pf("  repaired: %d to HubSpot (outbound events), %d to local (inbound changes), %d remain",
			p.Repair.Repaired[drift.ToHubSpot], p.Repair.Repaired[drift.ToLocal], p.Repair.Remaining)
	}
	if p.After != nil {
		pf("  after the queues settled: %d differences in %d records", p.After.Found(), sum(p.After.Scanned))
	}
	if p.Problem != "" {
		pf("  DRIFT PROBLEM: %s", p.Problem)
	} else {
		pf("  drift: found exactly what was made, repaired through the queues; a new scan finds nothing")
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

type driftDemo struct {
	sim        *hubspotsim.Server
	st         store.Store
	q          *queries
	api, token string
	http       *http.Client
}

// run makes the drift and checks what hubsync does with it.
func (dd *driftDemo) run(ctx context.Context) (*DriftPhase, error) {
	p := &DriftPhase{}
	start := time.Now()
	defer func() {
		p.Elapsed = time.Since(start)
		for _, r := range []*drift.Report{p.Found, p.Repair, p.After} {
			if r != nil {
				p.Calls += r.HubSpotCalls
			}
		}
	}()
	recs, err := records.New(dd.st, nil, records.Config{})
	if err != nil {
		return nil, err
	}
	lk := links.New(dd.st)
	// Four fresh contacts, synced the normal way.
	var ids, hids []string
	for i := range 4 {
		r, err := recs.Insert(ctx, "contacts", map[string]any{
			"email": fmt.Sprintf("drift-%d@demo.example", i), "first_name": "Drift", "last_name": fmt.Sprint(i), "phone": "+1 555 0000",
		})
		if err != nil {
			return nil, fmt.Errorf("demo drift: %w", err)
		}
		ids = append(ids, r.ID)
	}
	if err := waitConverged(ctx, dd.sim, dd.q); err != nil {
		return nil, fmt.Errorf("demo drift: %w", err)
	}
	for _, id := range ids {
		h, ok, err := lk.Lookup(ctx, "hubspot", "contacts", id)
		if err != nil || !ok {
			return nil, fmt.Errorf("demo drift: contact %s not linked after the sync (%v)", id, err)
		}
		hids = append(hids, h)
	}
	want := map[string]int{}
	made := func(line, key string) {
		p.Made = append(p.Made, line)
		want[key]++
	}

	// 1. HubSpot drops the webhooks of two edits (as after its retries).
	dd.sim.SetWebhooks(hubspotsim.WebhookSwitch{DropNext: 2})
	if err := dd.sim.UserUpdate("contacts", hids[0], map[string]string{"firstname": "Dropped"}); err != nil {
		return nil, err
	}
	if err := dd.sim.UserUpdate("contacts", hids[1], map[string]string{"lastname": "Dropped"}); err != nil {
		return nil, err
	}
	made("HubSpot edit of contact "+hids[0]+" firstname, webhook dropped → hubspot_newer", "firstname/hubspot_newer")
	made("HubSpot edit of contact "+hids[1]+" lastname, webhook dropped → hubspot_newer", "lastname/hubspot_newer")
	// 2. Edits while the app's webhooks are paused: a property and a new contact.
	dd.sim.SetWebhooks(hubspotsim.WebhookSwitch{Paused: true})
	if err := dd.sim.UserUpdate("contacts", hids[2], map[string]string{"phone": "+1 555 0199"}); err != nil {
		return nil, err
	}
	orphan, err := dd.sim.UserCreate("contacts", map[string]string{"email": "made-in-hubspot@demo.example", "firstname": "Paused"})
	if err != nil {
		return nil, err
	}
	dd.sim.SetWebhooks(hubspotsim.WebhookSwitch{})
	made("HubSpot edit of contact "+hids[2]+" phone, webhooks paused → hubspot_newer", "phone/hubspot_newer")
	made("HubSpot contact "+orphan+" created, webhooks paused → orphan, hubspot_newer", "[orphan]/hubspot_newer")
	// 3. A local row changed behind the API's back: no event, no clock.
	rec, err := recs.Get(ctx, "contacts", ids[3])
	if err != nil {
		return nil, err
	}
	fields := maps.Clone(rec.Fields)
	fields["first_name"] = "Behind"
	enc, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	if _, err := dd.st.DB().ExecContext(ctx, dialectsql.Rebind(dd.st.Dialect(), "UPDATE hubsync_record SET Fields = ? WHERE ObjectType = 'contacts' AND Id = ?"), string(enc), ids[3]); err != nil {
		return nil, fmt.Errorf("demo drift: %w", err)
	}
	made("local contact "+ids[3]+" first_name changed by SQL behind the API → local_newer", "firstname/local_newer")
	if err := waitConverged(ctx, dd.sim, dd.q); err != nil {
		return nil, fmt.Errorf("demo drift: %w", err)
	}

	// Detect (dry run), compare with what was made.
	if p.Found, err = dd.scan(ctx, true); err != nil {
		return nil, err
	}
	got := map[string]int{}
	for _, d := range p.Found.Differences {
		got[d.Key()+"/"+string(d.Verdict)]++
	}
	if !maps.Equal(got, want) {
		p.Problem = fmt.Sprintf("the scan found %v; made %v", fmtCounts(got), fmtCounts(want))
		return p, nil
	}
	// Repair, let the workers apply it, scan again.
	if p.Repair, err = dd.scan(ctx, false); err != nil {
		return nil, err
	}
	if p.Repair.Remaining != 0 || p.Repair.Repaired[drift.ToHubSpot] != 1 || p.Repair.Repaired[drift.ToLocal] != 4 {
		p.Problem = fmt.Sprintf("the repair left %d differences and repaired %v; want 1 to HubSpot and 4 to local", p.Repair.Remaining, p.Repair.Repaired)
		return p, nil
	}
	if err := waitConverged(ctx, dd.sim, dd.q); err != nil {
		return nil, fmt.Errorf("demo drift: after the repair: %w", err)
	}
	if p.After, err = dd.scan(ctx, true); err != nil {
		return nil, err
	}
	if n := p.After.Found(); n > 0 {
		p.Problem = fmt.Sprintf("after the repairs settled a scan still finds %d differences", n)
	}
	return p, nil
}

func fmtCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s×%d", k, m[k]))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// scan calls POST /admin/drift, as an operator (or cron) would.
func (dd *driftDemo) scan(ctx context.Context, dryRun bool) (*drift.Report, error) {
	body, _ := json.Marshal(map[string]any{"dry_run": dryRun})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, dd.api+"/admin/drift", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+dd.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := dd.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("demo drift: POST /admin/drift: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("demo drift: POST /admin/drift: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("demo drift: POST /admin/drift answered %d: %s", resp.StatusCode, b)
	}
	var rep drift.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("demo drift: the report does not decode: %w", err)
	}
	return &rep, nil
}
