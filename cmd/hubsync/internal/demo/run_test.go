package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testFaults are the default faults without injected 429s: the budget
// rightly pauses a whole ten-second window after any 429, which would make
// this CI test slow. The 429 path is tested in package outbound and shown by
// the default demo.
func testFaults() *hubspotsim.Faults {
	f := Faults
	f.Error429 = 0
	f.PartialFailure = 0.01
	return &f
}

func TestRunSmallIsConsistent(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(t.Context(), Config{Changes: 100, Seed: 5, Faults: testFaults(), Out: &out, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	if !rep.OK() {
		t.Fatalf("demo not consistent:\n%s", out.String())
	}
	if rep.LoopsOutbound != 0 || rep.EchoWrites != 0 {
		t.Errorf("loops = %d outbound, %d echo writes; want 0", rep.LoopsOutbound, rep.EchoWrites)
	}
	if rep.EchoesReceived == 0 {
		t.Error("no echo webhook received: the demo did not exercise the anti-loop")
	}
	// The receiver stores the echoes processed: the SyncWorker claims none.
	if rep.InboundAtReceipt != rep.EchoesReceived {
		t.Errorf("%d inbound events stored processed at receipt, %d echoes received: want every echo, and only them", rep.InboundAtReceipt, rep.EchoesReceived)
	}
	for _, c := range []struct {
		dir store.Direction
		l   Latency
		// unclaimed are the processed events no claim handed out.
		unclaimed int64
	}{{store.DirectionOutbound, rep.OutboundLatency, 0}, {store.DirectionInbound, rep.InboundLatency, rep.InboundAtReceipt}} {
		if n := rep.Queues[c.dir].ByStatus[store.StatusProcessed] - c.unclaimed; int64(c.l.N) != n || c.l.P50 <= 0 || c.l.P50 > c.l.P99 || c.l.P99 > c.l.Max {
			t.Errorf("%s latency %+v of %d claimed and processed events: want one per event, 0 < p50 ≤ p99 ≤ max", c.dir, c.l, n)
		}
	}
	if c := rep.HubSpot; c.BatchWrites == 0 || c.BatchWriteInputs < c.BatchWrites || c.BatchWriteInputs > c.BatchWrites*100 {
		t.Errorf("HubSpot took %d records in %d batch writes: want 1 to 100 per call", c.BatchWriteInputs, c.BatchWrites)
	}
	if rep.HubSpot.FaultsInjected["error500"]+rep.HubSpot.FaultsInjected["error503"]+rep.HubSpot.FaultsInjected["latency"] == 0 {
		t.Error("no fault injected")
	}
	t.Logf("report:\n%s", out.String())
	if !strings.Contains(out.String(), "RESULT: CONSISTENT") {
		t.Errorf("report lacks the consistent result line:\n%s", out.String())
	}
}

// TestRunDetectsDisagreement proves the report can fail: after the run
// converged, one HubSpot object is changed without a webhook and one local
// record without an outbound event.
func TestRunDetectsDisagreement(t *testing.T) {
	var out bytes.Buffer
	var hubspotID, localID string
	rep, err := Run(t.Context(), Config{
		Changes: 40, Seed: 9, NoFaults: true, Quiet: true, Out: &out, Dir: t.TempDir(),
		BeforeReport: func(ctx context.Context, h *Harness) error {
			objs := h.Sim.Objects("contacts")
			if len(objs) == 0 {
				t.Fatal("no contact in HubSpot")
			}
			hubspotID = objs[0].ID
			// No webhook URL: the simulator produces no event for this edit.
			if err := h.Sim.SetWebhookURL(""); err != nil {
				return err
			}
			if err := h.Sim.UserUpdate("contacts", hubspotID, map[string]string{"firstname": "Sabotaged"}); err != nil {
				return err
			}
			recs, err := h.Records.List(ctx, "companies", records.ListOptions{Limit: 1})
			if err != nil || len(recs) == 0 {
				t.Fatalf("no local company: %v", err)
			}
			localID = recs[0].ID
			// The demo's records service has no destinations: no outbound event.
			_, err = h.Records.Update(ctx, "companies", localID, recs[0].Version, map[string]any{"city": "Nowhere"})
			return err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	if rep.OK() {
		t.Fatalf("report says OK after sabotage:\n%s", out.String())
	}
	var sawHubSpot, sawLocal bool
	for _, d := range rep.Comparison.Differences {
		if d.HubSpotID == hubspotID && d.Field == "firstname" && d.Got == "Sabotaged" {
			sawHubSpot = true
		}
		if d.LocalID == localID && d.Field == "city" && d.Want == "Nowhere" {
			sawLocal = true
		}
	}
	if !sawHubSpot || !sawLocal {
		t.Errorf("differences miss the sabotage (HubSpot %v, local %v):\n%s", sawHubSpot, sawLocal, out.String())
	}
	if !strings.Contains(out.String(), "THE SIDES DIFFER") {
		t.Errorf("report lacks the failing result line:\n%s", out.String())
	}
}

func TestRunFailsClearlyWhenOutOfTime(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(t.Context(), Config{Changes: 400, NoFaults: true, Quiet: true, Duration: 300 * time.Millisecond, Out: &out, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	if rep.OK() || rep.Converged || !strings.Contains(rep.Problem, "not converged") {
		t.Fatalf("OK %v, converged %v, problem %q; want a clear not-converged failure:\n%s", rep.OK(), rep.Converged, rep.Problem, out.String())
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	_, err := Run(t.Context(), Config{Changes: -1})
	if err == nil || !strings.Contains(err.Error(), "Changes (-records)") {
		t.Fatalf("err = %v, want one naming Changes (-records)", err)
	}
}

// TestRunQStashIsConsistent runs the demo with outbound events dispatched
// through the QStash emulator (its delivery faults on: drops, delays,
// duplicates) to the signed worker endpoint, and the reconciliation cron.
func TestRunQStashIsConsistent(t *testing.T) {
	var out bytes.Buffer
	rep, err := Run(t.Context(), Config{Changes: 80, Seed: 3, Faults: testFaults(), Dispatch: DispatchQStash, Quiet: true, Out: &out, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rep.Write(&out)
	if !rep.OK() {
		t.Fatalf("qstash demo not consistent:\n%s", out.String())
	}
	q := rep.QStash
	if q == nil {
		t.Fatal("no QStash report")
	}
	if q.Published == 0 || q.Deliveries[200] == 0 || q.Emulator.Delivered == 0 {
		t.Errorf("nothing went through QStash: %+v", q)
	}
	if q.Deliveries[401] != 0 || q.Deliveries[500] != 0 {
		t.Errorf("deliveries refused or failed: %v", q.Deliveries)
	}
	if q.Emulator.Dropped+q.Emulator.Duplicated+q.Emulator.Delayed == 0 {
		t.Error("no QStash fault injected")
	}
	if rep.Limit429() != 0 {
		t.Errorf("%d 429s from the rate limit", rep.Limit429())
	}
	t.Logf("report:\n%s", out.String())
}
