package demo

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// Report is the outcome of a demo run.
type Report struct {
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// Converged is true when both sides settled before the deadline.
	Converged bool
	// Problem says why the run could not complete ("" when it did).
	Problem string
	// Dir is the kept temporary directory ("" unless Config.Keep).
	Dir string
	// LogFile is the service's log (inside Dir).
	LogFile string

	// Steps counts the workload's steps by kind; SkippedHubSpot counts the
	// HubSpot edits skipped because their record never reached HubSpot (its
	// create is an expected dead letter).
	Steps          map[OpKind]int
	SkippedHubSpot int
	// Conflicts counts 409s the local writer met (nothing else writes its records).
	Conflicts int64

	// Comparison is the record-by-record comparison of both sides.
	Comparison Comparison

	// Queues counts each queue's events by status and its failed attempts.
	Queues map[store.Direction]QueueCount
	// OutboundLatency is queued → processed of the processed outbound events;
	// OutboundReclaimed of those claimed again without a failed attempt
	// (lease lost with a killed replica, or released for the budget).
	OutboundLatency, OutboundReclaimed Latency
	// InboundLatency is queued (received) → processed of the processed
	// inbound events the SyncWorker claimed; its N is how many it claimed
	// and finished.
	InboundLatency Latency
	// InboundAtReceipt counts the inbound events stored processed at receipt
	// (echoes of our own writes), which no claim ever handed out.
	InboundAtReceipt int64
	// FirstDeadLetters are the dead letters when both sides first settled,
	// with their error messages; Requeued is how many of them were re-queued
	// (with the faults cleared) before the comparison.
	FirstDeadLetters []ops.DeadLetter
	Requeued         int64
	// DeadLetters are the failed events left at the comparison; any fails the run.
	DeadLetters []ops.DeadLetter
	// ExpectedDeadLetters counts those of FirstDeadLetters provoked on purpose
	// (the injected VALIDATION_ERROR).
	ExpectedDeadLetters int

	// HubSpot is what the simulator counted: API calls, 429s by policy
	// (the limit itself) and injected faults by kind, webhooks.
	HubSpot hubspotsim.Counters
	// QStash is set in qstash dispatch mode.
	QStash *QStashReport
	// EchoesReceived counts inbound events caused by hubsync's own writes.
	EchoesReceived int64
	// LoopsOutbound counts outbound events produced by a sync from their own
	// destination: changes that would go back where they came from. Must be 0.
	LoopsOutbound int64
	// EchoWrites counts sync writes to records that only the local side edits:
	// such a write can only come from an echo that was applied. Must be 0.
	EchoWrites int64

	// Subscriptions is the subscription-requests part: retries, conflicts,
	// superseded requests, and every contact's newest request against HubSpot.
	Subscriptions SubscriptionReport

	// Drift is the drift part, run once the sides agree (nil before).
	Drift *DriftPhase
}

// Limit429 sums the 429s caused by the rate limit itself (not injected).
func (r *Report) Limit429() int64 {
	var n int64
	for _, v := range r.HubSpot.RateLimited429 {
		n += v
	}
	return n
}

// OK reports whether both sides agree: converged after the dead letters were
// re-queued, every live record equal on both sides with no exception (no
// difference explained away), no loop, and no dead letter left.
func (r *Report) OK() bool { return r.syncOK() && (r.Drift == nil || r.Drift.OK()) }

// syncOK is OK without the drift part.
func (r *Report) syncOK() bool {
	return r.Problem == "" && r.Converged && r.Comparison.Consistent() && len(r.Comparison.Explained) == 0 &&
		r.LoopsOutbound == 0 && r.EchoWrites == 0 && len(r.DeadLetters) == 0 && r.Subscriptions.OK()
}

type collectInput struct {
	m        *mapping.Set
	w        Workload
	expected []Expected
	d        *driver
	q        *queries
	sim      *hubspotsim.Server
	st       store.Store
	recs     *records.Service
}

// collect reads both sides and the queues and builds the report.
func collect(ctx context.Context, in collectInput) (*Report, error) {
	r := &Report{Steps: in.w.Counts(), Conflicts: in.d.conflicts.Load()}
	lk := links.New(in.st)

	state := State{HubSpot: map[string][]hubspotsim.Object{}, Explained: map[string]string{}}
	for _, t := range in.m.ObjectTypes() {
		obj, _ := in.m.Lookup(t)
		state.HubSpot[t] = in.sim.Objects(obj.HubSpotType)
		after := ""
		for {
			page, err := in.recs.List(ctx, t, records.ListOptions{Limit: records.ListLimitMax, After: after})
			if err != nil {
				return nil, fmt.Errorf("demo: read local %s: %w", t, err)
			}
			for _, rec := range page {
				ext, _, err := lk.Lookup(ctx, outbox.SyncSourceHubSpot, t, rec.ID)
				if err != nil {
					return nil, fmt.Errorf("demo: read links: %w", err)
				}
				state.Local = append(state.Local, LocalRecord{ObjectType: t, ID: rec.ID, Fields: rec.Fields, HubSpotID: ext})
			}
			if len(page) < records.ListLimitMax {
				break
			}
			after = page[len(page)-1].ID
		}
	}

	var err error
	if r.DeadLetters, err = listDeadLetters(ctx, in.st); err != nil {
		return nil, err
	}

	// Expectations of records whose HubSpot edits were skipped do not hold;
	// their dead letter explains them.
	targets := in.d.targets()
	in.d.mu.Lock()
	skipped := maps.Clone(in.d.skipped)
	in.d.mu.Unlock()
	var exp []Expected
	var tgs []Target
	for i, e := range in.expected {
		if _, ok := skipped[i]; ok {
			continue
		}
		exp = append(exp, e)
		tgs = append(tgs, targets[i])
	}
	for _, op := range in.w.HubSpot {
		if _, ok := skipped[op.Ref]; ok && op.Kind != HubSpotCreate {
			r.SkippedHubSpot++
		}
	}
	r.Comparison = Compare(in.m, state, exp, tgs)

	if r.Queues, err = in.q.queueCounts(ctx); err != nil {
		return nil, err
	}
	if r.InboundLatency, r.OutboundLatency, r.OutboundReclaimed, err = in.q.queueLatency(ctx); err != nil {
		return nil, err
	}
	r.HubSpot = in.sim.Counters()
	if r.EchoesReceived, err = in.q.count(ctx, "inbound_echoes", appID); err != nil {
		return nil, err
	}
	if r.InboundAtReceipt, err = in.q.count(ctx, "inbound_at_receipt"); err != nil {
		return nil, err
	}
	if r.LoopsOutbound, err = in.q.count(ctx, "outbound_loops"); err != nil {
		return nil, err
	}
	writes, err := in.q.syncedWrites(ctx, outbox.SyncSourceHubSpot)
	if err != nil {
		return nil, err
	}
	for i, spec := range in.w.Records {
		if spec.Partition == PartitionLocal && targets[i].LocalID != "" {
			r.EchoWrites += int64(writes[spec.ObjectType+"/"+targets[i].LocalID])
		}
	}
	return r, nil
}

// Write prints the report.
func (r *Report) Write(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("")
	p("== hubsync demo: consistency report ==")
	p("run: %s, %d local changes (%d creates, %d updates, %d deletes), %d HubSpot user edits (%d creates, %d updates, %d deletes, %d merge)",
		r.Elapsed.Round(100*time.Millisecond),
		r.Steps[LocalCreate]+r.Steps[LocalUpdate]+r.Steps[LocalDelete], r.Steps[LocalCreate], r.Steps[LocalUpdate], r.Steps[LocalDelete],
		r.Steps[HubSpotCreate]+r.Steps[HubSpotUpdate]+r.Steps[HubSpotDelete]+r.Steps[HubSpotMerge],
		r.Steps[HubSpotCreate], r.Steps[HubSpotUpdate], r.Steps[HubSpotDelete], r.Steps[HubSpotMerge])
	if r.SkippedHubSpot > 0 {
		p("  %d HubSpot edits skipped: their record had not reached HubSpot (its create was dead-lettered)", r.SkippedHubSpot)
	}
	p("")
	p("records (live, per side):")
	for _, t := range r.Comparison.Types {
		p("  %-10s local %5d   HubSpot %5d   equal on every mapped property %5d", t.ObjectType, t.Local, t.HubSpot, t.Equal)
	}
	p("")
	p("events:")
	for _, d := range []store.Direction{store.DirectionOutbound, store.DirectionInbound, store.DirectionInternal} {
		q := r.Queues[d]
		p("  %-9s %6d total: %d processed, %d dead, %d open; %d failed attempts retried",
			d, q.Total(), q.ByStatus[store.StatusProcessed], q.ByStatus[store.StatusFailed], q.Open(), q.Retries)
	}
	p("  outbound queued → processed: %s", r.OutboundLatency)
	p("    claimed again without a failure (lease lost with a killed replica, or released for the budget): %s", r.OutboundReclaimed)
	p("  inbound queued → processed by the SyncWorker: %s", r.InboundLatency)
	p("    stored processed at receipt, never claimed (echoes of our own writes): %d", r.InboundAtReceipt)
	c := r.HubSpot
	writes := int64(0)
	for path, n := range c.RequestsByPath {
		if strings.Contains(path, "/batch/") && !strings.HasSuffix(path, "/batch/read") {
			writes += n
		}
	}
	ob := r.Queues[store.DirectionOutbound].ByStatus[store.StatusProcessed]
	p("")
	p("HubSpot API:")
	p("  %d calls (%d batch writes for %d outbound events: coalesced and batched)", c.Requests, writes, ob)
	if c.BatchWrites > 0 {
		p("  %.1f records per write call (%d records in %d batch writes the CRM took)", float64(c.BatchWriteInputs)/float64(c.BatchWrites), c.BatchWriteInputs, c.BatchWrites)
	}
	for _, path := range slices.Sorted(maps.Keys(c.RequestsByPath)) {
		p("    %5d %s", c.RequestsByPath[path], path)
	}
	p("  429s: %d from the rate limit itself (must be 0), %d injected", r.Limit429(), c.FaultsInjected["error429"])
	if len(c.FaultsInjected) > 0 {
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(c.FaultsInjected)) {
			fs = append(fs, fmt.Sprintf("%s %d", k, c.FaultsInjected[k]))
		}
		p("  faults injected: %s", strings.Join(fs, ", "))
	}
	p("  webhooks: %d events delivered in %d requests (%d failed attempts retried, %d dropped); %d echoes of our own writes received and ignored",
		c.WebhooksSent, c.WebhookDeliveries, c.WebhookFailures, c.WebhooksDropped, r.EchoesReceived)
	if r.QStash != nil {
		r.QStash.write(p)
	}
	p("")
	p("loops: %d outbound events from HubSpot's own sync, %d echoes applied to records only edited locally (both must be 0)", r.LoopsOutbound, r.EchoWrites)
	p("")
	p("dead letters when both sides first settled: %d (%d provoked on purpose: injected VALIDATION_ERROR)", len(r.FirstDeadLetters), r.ExpectedDeadLetters)
	for _, dl := range r.FirstDeadLetters {
		p("  %s %s %s/%s %s after %d attempts: %s", dl.Direction, dl.Key, dl.ObjectType, dl.RecordID, dl.EventType, dl.Attempt, dl.ErrorMessage)
	}
	if len(r.FirstDeadLetters) > 0 {
		p("  faults cleared, %d re-queued as `hubsync dlq retry` does, both sides settled again", r.Requeued)
	}
	p("dead letters left at the comparison: %d", len(r.DeadLetters))
	for _, dl := range r.DeadLetters {
		p("  %s %s %s/%s %s after %d attempts: %s", dl.Direction, dl.Key, dl.ObjectType, dl.RecordID, dl.EventType, dl.Attempt, dl.ErrorMessage)
	}
	if r.Conflicts > 0 {
		p("")
		p("version conflicts met by the local writer: %d", r.Conflicts)
	}
	r.Subscriptions.write(p)
	if r.Drift != nil {
		r.Drift.write(p)
	}
	p("")
	if r.Problem != "" {
		p("PROBLEM: %s", r.Problem)
	}
	if n := len(r.Comparison.Differences); n > 0 {
		p("DIFFERENCES: %d", n)
		for i, d := range r.Comparison.Differences {
			if i == 50 {
				p("  … and %d more", n-50)
				break
			}
			p("  %s", d)
		}
	}
	if r.Dir != "" {
		p("kept: %s (database hubsync.db, service log hubsync.log)", r.Dir)
	}
	if r.OK() {
		p("RESULT: CONSISTENT — every live record is equal on both sides, every contact's subscriptions equal its newest request, no exceptions, no dead letters left, loops 0, the drift made on purpose found and repaired")
	} else {
		var why []string
		if !r.Converged {
			why = append(why, "did not converge")
		}
		if n := len(r.Comparison.Differences); n > 0 {
			why = append(why, fmt.Sprintf("%d differences", n))
		}
		if r.LoopsOutbound+r.EchoWrites > 0 {
			why = append(why, fmt.Sprintf("%d loops", r.LoopsOutbound+r.EchoWrites))
		}
		if n := len(r.Comparison.Explained); n > 0 {
			why = append(why, fmt.Sprintf("%d differences explained by dead letters", n))
		}
		if n := len(r.DeadLetters); n > 0 {
			why = append(why, fmt.Sprintf("%d dead letters left", n))
		}
		if !r.Subscriptions.OK() {
			why = append(why, fmt.Sprintf("subscriptions: %d mismatches, %d retries not answered with their original, %d requests pending",
				len(r.Subscriptions.Mismatches), r.Subscriptions.ReplayMismatches, r.Subscriptions.ByStatus[subscriptions.StatusPending]))
		}
		if r.Drift != nil && !r.Drift.OK() {
			why = append(why, "drift: "+r.Drift.Problem)
		}
		p("RESULT: THE SIDES DIFFER — %s", strings.Join(why, ", "))
	}
}
