package outbound

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/eventtrace"
	"github.com/hubsync/hubsync/internal/leasekeep"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// linkParallelism bounds the concurrent Link transactions of one cycle when
// the Links cannot link many records at once (see BatchLinks).
const linkParallelism = 8

// cycle is the work on one claimed set of events.
type cycle struct {
	w          *Worker
	ctx        context.Context // the caller's; HubSpot calls use it
	keep       *leasekeep.Keeper
	leaseShort bool               // the lease has too little time left for another call
	grant      budget.Reservation // of the call being made
	refusedFor time.Duration      // the budget refused: later calls are released for this long
	ahead      time.Duration      // how far ahead the cycle may book its calls (Config.BudgetAhead)
	sum        Summary
	errs       []error
	// spans are the claimed events' own spans, by event id; a HubSpot call
	// links to those of the events it carries.
	spans map[string]trace.Span
}

// mark records on event id's span what became of it.
func (c *cycle) mark(id, outcome string) {
	if s, ok := c.spans[id]; ok {
		s.SetAttributes(attribute.String(eventtrace.AttrOutcome, outcome))
	}
}

// storeCtx is for bookkeeping after HubSpot calls: it survives the
// cancellation of the cycle, so that what HubSpot accepted gets recorded.
func (c *cycle) storeCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(c.ctx), storeOpTimeout)
}

// process pushes claimed events: one cycle. ahead is how far ahead it may
// book its calls (Config.BudgetAhead; 0 for none); hold says whether it holds
// calls filled below half (Config.Hold).
func (w *Worker) process(ctx context.Context, evs []store.OutboundEvent, ahead time.Duration, hold bool) (Summary, error) {
	if len(evs) == 0 {
		return Summary{}, nil
	}
	ctx, span := w.tracer.Start(ctx, "hubsync.outbound.cycle", trace.WithAttributes(attribute.Int("hubsync.events", len(evs))))
	defer span.End()
	leases := make([]store.Lease, len(evs))
	for i, e := range evs {
		leases[i] = e.Lease()
	}
	keep := leasekeep.Start(ctx, w.cfg.Store, leasekeep.Config{
		Leases: leases, Duration: w.cfg.LeaseDuration, Expiry: leaseExpiry(evs, w.cfg.Now().Add(w.cfg.LeaseDuration)),
		Now: w.cfg.Now, Logger: w.log,
	})
	defer keep.Stop()
	c := &cycle{w: w, ctx: ctx, keep: keep, ahead: ahead, spans: make(map[string]trace.Span, len(evs))}
	for _, ev := range evs {
		_, evSpan := eventtrace.Start(ctx, w.tracer, "hubsync.outbound.event", ev.ID,
			attribute.String("hubsync.object_type", ev.ObjectType), attribute.String("hubsync.record_id", ev.RecordID),
			attribute.String("hubsync.event_type", ev.EventType))
		c.spans[ev.ID] = evSpan
		defer evSpan.End()
	}
	c.sum.Claimed = len(evs)
	if evs = c.handOff(evs); len(evs) == 0 {
		return c.sum, errors.Join(c.errs...)
	}

	links, pushed, owed, err := w.lookupLinks(ctx, evs)
	if err != nil {
		c.releaseEvents(evs, 0)
		return c.sum, err
	}
	plan, err := BuildPlanOwed(evs, links, pushed, owed, w.cfg.Mapping)
	if err != nil {
		c.releaseEvents(evs, 0)
		return c.sum, err
	}
	c.sum.Records += len(plan.Records)
	c.sum.Coalesced = plan.Coalesced()
	plan.Calls = c.goneAtSource(plan.Calls, links, pushed)
	plan.Calls = c.notOverwritten(plan.Calls)
	w.cfg.Metrics.add(&w.cfg.Metrics.coalesced, int64(c.sum.Coalesced))

	var none []*RecordPlan
	for _, r := range plan.Records {
		switch r.Op {
		case OpNone:
			none = append(none, r)
		case OpFail:
			c.fail(r, r.Reason)
		}
	}
	if len(none) > 0 {
		// HubSpot has what these records hold: record that state (not for a
		// superseded record, whose events are older than it), then complete.
		var record, superseded []*RecordPlan
		for _, r := range none {
			if r.Superseded {
				superseded = append(superseded, r)
			} else {
				record = append(record, r)
			}
		}
		n := c.succeed(record, nil)
		s := c.complete(superseded)
		c.sum.Skipped += n + s
		c.sum.Superseded += s
		w.cfg.Metrics.add(&w.cfg.Metrics.skipped, int64(n+s))
		w.cfg.Metrics.add(&w.cfg.Metrics.superseded, int64(s))
	}

	// Each call reserves its own tokens right before it is made, so that it
	// is counted in the budget's window when it is made (budget
	// Reservation.UseBy), never reserved early and made in a later window.
	calls := plan.Calls
	if hold {
		calls = c.hold(calls)
	}
	for i, call := range calls {
		if ctx.Err() != nil {
			for _, rest := range calls[i:] {
				c.release(rest.Records, 0)
			}
			c.errs = append(c.errs, ctx.Err())
			break
		}
		c.exec(call.Op, call.HubSpotType, call.IDProperty, call.Records)
	}
	return c.sum, errors.Join(c.errs...)
}

// hold releases, until the worker's next hold tick, the records of each call
// filled below half whose events were all claimed for the first time, and
// returns the calls to make now. At the tick they are claimed again, first,
// with what arrived meanwhile, and sent: a record is held once.
func (c *cycle) hold(calls []Call) []Call {
	cfg := c.w.cfg
	now := cfg.Now()
	var send []Call
	var held []*RecordPlan
	for _, call := range calls {
		if len(call.Records) >= hubspot.MaxBatchInputs/2 || claimedBefore(call.Records) {
			send = append(send, call)
			continue
		}
		held = append(held, call.Records...)
	}
	if len(held) == 0 || c.paused() {
		return calls // nothing to hold, or the pause decides: reserve releases them for it
	}
	released := c.sum.Released
	c.release(held, c.w.nextTick(now).Sub(now))
	n := c.sum.Released - released
	c.sum.Held += n
	cfg.Metrics.add(&cfg.Metrics.held, int64(n))
	return send
}

// paused reports whether the budget, if it can tell (a budget.Scheduler),
// is paused after a 429: the cycle's calls then wait for the pause's end,
// which reserve reports, rather than for a hold tick.
func (c *cycle) paused() bool {
	sched, ok := c.w.cfg.Budget.(budget.Scheduler)
	if !ok {
		return false
	}
	d, err := sched.Paused(c.ctx, c.w.cfg.BudgetKey)
	return err == nil && d > 0
}

// claimedBefore reports whether an event of recs was claimed before this
// claim: held, released for the budget, or leased by a replica that died.
func claimedBefore(recs []*RecordPlan) bool {
	for _, r := range recs {
		for _, e := range r.Events {
			if e.Attempt > 1 {
				return true
			}
		}
	}
	return false
}

// leaseExpiry is the earliest lease expiry of evs: the store stamps a lease
// when the claim starts, not when it returns. fallback is for events that
// carry no expiry.
func leaseExpiry(evs []store.OutboundEvent, fallback time.Time) time.Time {
	var at time.Time
	for _, e := range evs {
		if e.LeaseExpiresDate != nil && (at.IsZero() || e.LeaseExpiresDate.Before(at)) {
			at = *e.LeaseExpiresDate
		}
	}
	if at.IsZero() {
		return fallback
	}
	return at
}

// reserveAttempts bounds the reservations of one call whose grants arrive
// too late to use (a replica whose clock is behind the others').
const reserveAttempts = 3

// reserve takes tokens from the budget for recs' call and returns when the
// call may be made: at once, or, when the cycle may book ahead (c.ahead) and
// the budget can, at a booked instant it waits for with recs kept, their
// leases extended first to cover the wait and then need (the call and its
// bookkeeping), so that nothing but the call follows the grant's UseBy check.
// When refused (or the budget fails, or the lease cannot be extended) it
// releases recs and reports false. After one refusal the cycle's later calls
// are released without asking again.
func (c *cycle) reserve(tokens int, recs []*RecordPlan, need time.Duration) bool {
	cfg := c.w.cfg
	if c.refusedFor > 0 {
		c.release(recs, c.refusedFor)
		return false
	}
	sched, _ := cfg.Budget.(budget.Scheduler)
	for range reserveAttempts {
		var res budget.Reservation
		var err error
		if sched != nil && c.ahead > 0 {
			res, err = sched.Schedule(c.ctx, cfg.BudgetKey, tokens, c.ahead)
		} else {
			res, err = cfg.Budget.Reserve(c.ctx, cfg.BudgetKey, tokens)
		}
		if err != nil {
			c.release(recs, 0)
			c.errs = append(c.errs, fmt.Errorf("outbound: reserve %d calls: %w", tokens, err))
			return false
		}
		if !res.Granted {
			// Room further away than the cycle may book: another cycle will
			// claim these records again in time to book it.
			wait := max(res.RetryAfter-c.ahead, time.Millisecond)
			c.refusedFor = wait
			c.denied(recs, wait)
			return false
		}
		if res.Wait > 0 {
			c.w.cfg.Metrics.add(&c.w.cfg.Metrics.budgetBooked, 1)
			if res.Full {
				c.w.noteShort(cfg.Now().UnixNano())
			}
			if !c.keep.Ensure(c.ctx, res.Wait+need) {
				// The grant goes unused (counted, so only stricter).
				c.leaseShort = true
				c.release(recs, 0)
				return false
			}
			if !c.wait(res.Wait) {
				c.release(recs, 0)
				return false
			}
			if !c.unpaused(sched, recs) {
				return false
			}
		}
		if !res.Late(cfg.Now()) {
			c.grant = res
			return true
		}
		// Granted, but already past the moment its call had to start: the grant
		// stays counted (stricter, never looser); take another.
	}
	c.release(recs, 0)
	c.errs = append(c.errs, fmt.Errorf("outbound: %d budget grants in a row arrived after their UseBy; is this replica's clock behind the others'?", reserveAttempts))
	return false
}

// unpaused reports whether a call booked ahead may go out at its instant:
// HubSpot may have answered a 429 since it was booked, and the budget's pause
// then holds for every call, booked or not. When paused (or the pause cannot
// be read) it releases recs until the pause ends and refuses the cycle's
// later calls; the booked grant stays counted.
func (c *cycle) unpaused(sched budget.Scheduler, recs []*RecordPlan) bool {
	paused, err := sched.Paused(c.ctx, c.w.cfg.BudgetKey)
	if err != nil {
		c.release(recs, 0)
		c.errs = append(c.errs, fmt.Errorf("outbound: read the budget's pause before a booked call: %w", err))
		return false
	}
	if paused > 0 {
		c.refusedFor = paused
		c.denied(recs, paused)
		return false
	}
	return true
}

// wait waits d; false when the cycle's context ended first.
func (c *cycle) wait(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// denied releases recs, without using an attempt, until the budget has room.
func (c *cycle) denied(recs []*RecordPlan, retryAfter time.Duration) {
	wait := max(retryAfter, time.Millisecond)
	c.release(recs, wait)
	c.sum.BudgetRetryAfter = max(c.sum.BudgetRetryAfter, wait)
	c.w.cfg.Metrics.add(&c.w.cfg.Metrics.budgetDenied, 1)
}

// exec reserves the budget for one batch call for recs, makes it and settles
// every record.
func (c *cycle) exec(op Op, t hubspot.ObjectType, idProperty string, recs []*RecordPlan) {
	cfg := c.w.cfg
	// The call must be answered, and its result stored (links, pushed state,
	// completion), before the lease expires; otherwise the answer could arrive
	// after another worker re-claimed the events. So the lease must hold for
	// the call's deadline and a margin (Config.callLease; a resolve-archive's
	// second call ensures its own). Once the lease is too short, every later
	// call of the cycle is released too. Checked before the reservation, so
	// that no grant is spent on a call that is not made.
	need := cfg.callLease()
	if c.leaseShort || !c.keep.Ensure(c.ctx, need) {
		c.leaseShort = true
		c.release(recs, 0)
		return
	}
	if !c.reserve(callsOf(op), recs, need) {
		return
	}
	hs := cfg.HubSpot
	ctx, span := c.callSpan(op, t, recs)
	defer span.End()
	ctx, cancel := c.callCtx(c.underGrant(ctx))
	defer cancel()
	var res *hubspot.BatchResult
	var err error
	c.sum.Calls++
	switch op {
	case OpUpdate:
		in := make([]hubspot.UpdateInput, len(recs))
		for i, r := range recs {
			in[i] = hubspot.UpdateInput{ID: r.HubSpotID, Properties: r.Properties, ObjectWriteTraceID: r.Key.RecordID}
		}
		res, err = hs.BatchUpdate(ctx, t, in)
	case OpUpsert:
		in := make([]hubspot.UpsertInput, len(recs))
		for i, r := range recs {
			in[i] = hubspot.UpsertInput{ID: r.IDValue, IDProperty: idProperty, Properties: r.Properties, ObjectWriteTraceID: r.Key.RecordID}
		}
		res, err = hs.BatchUpsert(ctx, t, in)
	case OpCreate:
		in := make([]hubspot.CreateInput, len(recs))
		for i, r := range recs {
			in[i] = hubspot.CreateInput{Properties: r.Properties, ObjectWriteTraceID: r.Key.RecordID}
		}
		res, err = hs.BatchCreate(ctx, t, in)
	case OpArchive:
		ids := make([]string, len(recs))
		for i, r := range recs {
			ids[i] = r.HubSpotID
		}
		err = hs.BatchArchive(ctx, t, ids)
	case OpResolveArchive:
		ids := make([]string, len(recs))
		for i, r := range recs {
			ids[i] = r.IDValue
		}
		res, err = hs.BatchRead(ctx, t, ids, []string{idProperty}, idProperty)
	case OpResolveUpsert:
		var ids []string
		for _, r := range recs {
			ids = append(ids, r.PriorIDValues...)
		}
		res, err = hs.BatchRead(ctx, t, ids, []string{idProperty}, idProperty)
	}
	err = c.callErr(ctx, err)
	c.countRateLimited(err)
	eventtrace.Fail(span, err)
	if err != nil {
		cfg.Metrics.call(op, outcomeOf(ctx, err))
		c.callFailed(op, t, idProperty, recs, err)
		return
	}
	outcome := "ok"
	if res != nil && res.Multi {
		outcome = "partial"
	}
	cfg.Metrics.call(op, outcome)
	switch op {
	case OpArchive:
		c.succeed(recs, nil)
	case OpResolveArchive:
		c.resolved(t, idProperty, recs, res)
	case OpResolveUpsert:
		c.resolvedUpsert(t, idProperty, recs, res)
	default:
		c.results(op, recs, res)
	}
}

// callSpan starts the span of one HubSpot call of the cycle, linked to the
// spans of the events it carries.
func (c *cycle) callSpan(op Op, t hubspot.ObjectType, recs []*RecordPlan) (context.Context, trace.Span) {
	var ls []trace.Link
	for _, r := range recs {
		for _, ev := range r.Events {
			if s, ok := c.spans[ev.ID]; ok && s.SpanContext().IsValid() {
				ls = append(ls, trace.Link{SpanContext: s.SpanContext(), Attributes: []attribute.KeyValue{attribute.String(eventtrace.AttrEventID, ev.ID)}})
			}
		}
	}
	return c.w.tracer.Start(c.ctx, "hubsync.outbound.call", trace.WithLinks(ls...), trace.WithAttributes(
		attribute.String("hubsync.hubspot.op", op.String()), attribute.String("hubsync.hubspot.object_type", string(t)),
		attribute.Int("hubsync.records", len(recs))))
}

// callCtx bounds one HubSpot call: by Config.HTTPTimeout, and never past the
// lease's known expiry less the margin for storing the result, so that no
// answer can arrive after another worker could have re-claimed the events,
// however long the reservation before it took.
func (c *cycle) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	cfg := c.w.cfg
	margin := cfg.callLease() - cfg.HTTPTimeout
	return context.WithTimeout(ctx, min(cfg.HTTPTimeout, c.keep.Expiry().Sub(cfg.Now())-margin))
}

// underGrant marks ctx as the context of one call made under the cycle's
// current grant, so that the budget counts the call from its answer
// (budget.WithCall). Only a call the grant was reserved for may carry it.
func (c *cycle) underGrant(ctx context.Context) context.Context {
	return budget.WithCall(ctx, c.w.cfg.BudgetKey, c.grant)
}

// callErr turns the end of a call's own deadline (callCtx) into a retryable
// failure, as the client's own timeout is; the cycle's cancellation stays
// as it is (released, no attempt used).
func (c *cycle) callErr(callCtx context.Context, err error) error {
	if err == nil || c.ctx.Err() != nil || !errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return err
	}
	return &hubspot.Error{Kind: hubspot.KindRetryable, Err: fmt.Errorf("no answer within the call's deadline (outbound Config.HTTPTimeout %s, or the lease): %w", c.w.cfg.HTTPTimeout, err)}
}

func callsOf(op Op) int {
	if op == OpResolveArchive {
		return 2
	}
	return 1
}

func outcomeOf(ctx context.Context, err error) string {
	if ctx.Err() != nil && hubspot.KindOf(err) == hubspot.KindNone {
		return "canceled"
	}
	return hubspot.KindOf(err).String()
}

// countRateLimited counts a 429 in the metrics. The budget learns of it (and
// of every answer's rate-limit headers) from the HubSpot client's response
// hook, which the composition wires to budget.ObserveHubSpot once for all calls.
func (c *cycle) countRateLimited(err error) {
	if hubspot.KindOf(err) == hubspot.KindRateLimited {
		c.w.cfg.Metrics.add(&c.w.cfg.Metrics.rateLimited, 1)
	}
}

// callFailed settles recs after a call that failed as a whole.
func (c *cycle) callFailed(op Op, t hubspot.ObjectType, idProperty string, recs []*RecordPlan, err error) {
	kind := hubspot.KindOf(err)
	switch {
	case c.ctx.Err() != nil && kind == hubspot.KindNone:
		// Our own cancellation (hard stop): the write may or may not have been
		// applied; writes are idempotent upserts/updates, so give the events
		// back without using an attempt.
		c.release(recs, 0)
		c.errs = append(c.errs, err)
	case kind == hubspot.KindAuth:
		c.w.log.Error("outbound: HubSpot refused the access token; check the access token (hubspot.Config.AccessToken; HUBSPOT_ACCESS_TOKEN for hubsync serve) and the app's scopes. Events are released, not failed",
			"err", err, "records", len(recs), "retry_in", c.w.cfg.AuthRetryDelay)
		c.release(recs, c.w.cfg.AuthRetryDelay)
		c.errs = append(c.errs, fmt.Errorf("%w: %w", ErrAuth, err))
	case (kind == hubspot.KindConflict || kind == hubspot.KindValidation || kind == hubspot.KindNotFound) && len(recs) > 1:
		// HubSpot rejected the whole batch for one input's sake (and names only
		// the first): halve it until the culprit stands alone, so one bad record
		// never blocks the rest.
		c.w.cfg.Metrics.add(&c.w.cfg.Metrics.splits, 1)
		half := len(recs) / 2
		c.exec(op, t, idProperty, recs[:half])
		c.exec(op, t, idProperty, recs[half:])
	case kind == hubspot.KindConflict || kind == hubspot.KindValidation || kind == hubspot.KindNotFound:
		var he *hubspot.Error
		errors.As(err, &he)
		c.recordError(op, recs[0], kind, he.Message, he.ExistingID)
	default:
		// 429, 423, 5xx, timeouts, resets, and anything unexplained: retry with
		// backoff, no sooner than HubSpot asked.
		delay := hubspot.RetryAfterOf(err)
		var he *hubspot.Error
		if c.w.cfg.Budget != nil && errors.As(err, &he) && strings.EqualFold(he.PolicyName, budget.PolicyDaily) && !he.RetryAfterHeader {
			// HubSpot named no wait: the client's guess of the account's
			// midnight is UTC's on a replica that could not learn the zone.
			// The budget, paused until the end of the day it keeps (in the
			// zone every replica shares), holds the records until then;
			// without a budget, the guess stands.
			delay = 0
		}
		c.retry(recs, err.Error(), delay)
	}
}

// notOverwritten drops from each update the properties whose local field
// no longer holds the value the record's last claimed event carries
// (Config.LocalRecords' CurrentFields): HubSpot changed it since and the
// change was applied here (a HubSpot change enqueues no outbound event), or
// a later local write did (and its own event follows). Written, the older
// value would overwrite HubSpot's newer one while the record keeps it: a
// crash that delays an update by a lease would otherwise leave the two
// sides apart. An update left with nothing to write completes without a
// call. It returns the calls left.
func (c *cycle) notOverwritten(calls []Call) []Call {
	lr := c.w.cfg.LocalRecords
	if lr == nil {
		return calls
	}
	var updates []*RecordPlan
	for _, call := range calls {
		if call.Op == OpUpdate {
			updates = append(updates, call.Records...)
		}
	}
	if len(updates) == 0 {
		return calls
	}
	types, byType := byObjectType(updates, func(*RecordPlan) bool { return true })
	current := map[RecordKey]map[string]any{}
	ctx, cancel := c.storeCtx()
	for _, t := range types {
		ids := make([]string, len(byType[t]))
		for i, r := range byType[t] {
			ids[i] = r.Key.RecordID
		}
		got, err := lr.CurrentFields(ctx, t, ids)
		if err != nil {
			// Write as before: the check only keeps older values back.
			c.errs = append(c.errs, fmt.Errorf("outbound: read the current fields of %d %s records: %w", len(ids), t, err))
			continue
		}
		for id, f := range got {
			current[RecordKey{t, id}] = f
		}
	}
	cancel()
	out := calls[:0]
	for _, call := range calls {
		if call.Op == OpUpdate {
			keep := call.Records[:0:0]
			for _, r := range call.Records {
				cur, ok := current[r.Key]
				if !ok {
					keep = append(keep, r)
					continue
				}
				var left bool
				if !c.oweOrRelease(r, func() (err error) { left, err = c.withoutOverwritten(r, cur); return err }) {
					continue
				}
				if !left {
					c.sum.Superseded += c.complete([]*RecordPlan{r})
					continue
				}
				keep = append(keep, r)
			}
			if len(keep) == 0 {
				continue
			}
			call.Records = keep
		}
		out = append(out, call)
	}
	return out
}

// withoutOverwritten drops from r's properties those whose local field in
// cur differs from the value r's last event carries, and reports whether
// any property is left. It fails, leaving r's properties as they were, when
// the dropped fields could not be recorded as owed.
func (c *cycle) withoutOverwritten(r *RecordPlan, cur map[string]any) (bool, error) {
	obj, ok := c.w.cfg.Mapping.Lookup(r.Key.ObjectType)
	if !ok || len(r.Events) == 0 {
		return true, nil
	}
	snap, err := outbox.ParseSnapshot(r.Events[len(r.Events)-1].Payload)
	if err != nil || snap.Fields == nil {
		return true, nil
	}
	var dropped []string
	for p := range r.Properties {
		f, ok := obj.LocalField(p)
		if !ok {
			continue
		}
		sent, err1 := obj.ToHubSpot(map[string]any{f.Local: snap.Fields[f.Local]})
		now, err2 := obj.ToHubSpot(map[string]any{f.Local: cur[f.Local]})
		if err1 != nil || err2 != nil || sent[p] == now[p] {
			continue
		}
		dropped = append(dropped, p)
	}
	if len(dropped) == 0 {
		return true, nil
	}
	slices.Sort(dropped)
	c.w.log.Info("outbound: the record's fields changed since its event (by HubSpot, or by a later local write); their older values are not written",
		"record", r.Key.String(), "hubspot_id", r.HubSpotID, "properties", strings.Join(dropped, ","))
	props := maps.Clone(r.Properties)
	var owed []string // the dropped properties' local fields
	for _, p := range dropped {
		delete(props, p)
		if f, ok := obj.LocalField(p); ok {
			owed = append(owed, f.Local)
		}
	}
	// Owed, the fields go with the record's next write (their latest
	// values: HubSpot's own, when its change was applied here).
	if err := c.oweFields(r, owed); err != nil {
		return false, err
	}
	r.Properties = props
	r.OwedOnly = slices.DeleteFunc(slices.Clone(r.OwedOnly), func(p string) bool { return slices.Contains(dropped, p) })
	// The write's recorded state keeps the events' values of the dropped
	// fields, which HubSpot did not get, and the record's later events are
	// planned against them: one that sets a field back to such a value sends
	// nothing; owed (above), they are sent again.
	if r.Next != nil {
		r.Next.Carried = slices.DeleteFunc(slices.Clone(r.Next.Carried), func(f string) bool { return slices.Contains(owed, f) })
	}
	return len(props) > 0, nil
}

// goneAtSource completes, without a call, the records of calls that would
// write afresh (an upsert or a create: no link) an object HubSpot deleted or
// merged away: the record was linked to it (its pushed state names it) and
// the inbound side, applying the deletion or merge, deleted or unlinked the
// record while its local change waited; or, with SourceDeletedRecords, the
// inbound side deleted the record (so also one with no pushed state). HubSpot's
// change is the newer one, and a fresh upsert would bring the object back or
// write over the merge's survivor. It returns the calls left.
func (c *cycle) goneAtSource(calls []Call, linked map[RecordKey]string, pushed map[RecordKey]links.Pushed) []Call {
	tl, _ := c.w.cfg.Links.(TombstoneLinks)
	sd, _ := c.w.cfg.LocalRecords.(SourceDeletedRecords)
	if (tl == nil || len(pushed) == 0) && sd == nil {
		return calls
	}
	gone := map[*RecordPlan]bool{}
	var unknown []*RecordPlan
	for _, call := range calls {
		if call.Op != OpUpsert && call.Op != OpCreate && call.Op != OpResolveUpsert {
			continue
		}
		for _, r := range call.Records {
			if linked[r.Key] != "" {
				continue
			}
			if p, had := pushed[r.Key]; tl != nil && had && !p.Deleted && p.ExternalID != "" {
				if ok, why := c.tombstoned(tl, r, p.ExternalID); ok {
					if why == tombstonedDeleted && c.outlivedDeletion(r) {
						// The deletion left the record here: it found no
						// link (this worker had unlinked the record after its
						// update found no object and no deletion came in
						// time), and could not tell whether a write since had
						// made another object. Written afresh, the record
						// has an object again, as it has a row here.
						c.w.log.Info("outbound: HubSpot deleted the record's object, and the deletion, finding the record unlinked, left it here; writing it afresh",
							"record", r.Key.String(), "hubspot_id", p.ExternalID)
						unknown = append(unknown, r)
						continue
					}
					c.w.log.Info("outbound: the record's HubSpot object is gone at the source; its local change is not written afresh",
						"record", r.Key.String(), "hubspot_id", p.ExternalID, "reason", why)
					gone[r] = true
					continue
				}
			}
			unknown = append(unknown, r)
		}
	}
	if sd != nil && len(unknown) > 0 {
		types, byType := byObjectType(unknown, func(*RecordPlan) bool { return true })
		for _, typ := range types {
			recs := byType[typ]
			ids := make([]string, len(recs))
			for i, r := range recs {
				ids[i] = r.Key.RecordID
			}
			ctx, cancel := c.storeCtx()
			deleted, err := sd.DeletedAtSource(ctx, c.w.cfg.Destination, typ, ids)
			cancel()
			if err != nil {
				// Written as before the question was asked; logged.
				c.errs = append(c.errs, fmt.Errorf("outbound: records of %s deleted by HubSpot: %w", typ, err))
				continue
			}
			for _, r := range recs {
				if slices.Contains(deleted, r.Key.RecordID) {
					c.w.log.Info("outbound: HubSpot's deletion or merge of the record's object deleted the record here while its local change waited; the change is not written afresh",
						"record", r.Key.String())
					gone[r] = true
				}
			}
		}
	}
	if len(gone) == 0 {
		return calls
	}
	out := calls[:0]
	for _, call := range calls {
		keep := call.Records[:0:0]
		for _, r := range call.Records {
			if gone[r] {
				c.sum.Superseded += c.complete([]*RecordPlan{r})
				continue
			}
			keep = append(keep, r)
		}
		if len(keep) > 0 {
			call.Records = keep
			out = append(out, call)
		}
	}
	return out
}

// tombstonedDeleted is tombstoned's reason for an object deleted at the
// source (a merged-away one's names its survivor).
const tombstonedDeleted = "deleted"

// tombstoned reports whether HubSpot deleted or merged away the object
// hubspotID, per its tombstone, and says which. A failed lookup counts as
// not gone (the write goes ahead, as before tombstones were asked).
func (c *cycle) tombstoned(tl TombstoneLinks, r *RecordPlan, hubspotID string) (bool, string) {
	ctx, cancel := c.storeCtx()
	defer cancel()
	t, ok, err := tl.Tombstone(ctx, c.w.cfg.Destination, r.Key.ObjectType, hubspotID)
	switch {
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("outbound: tombstone of %s %s: %w", r.Key, hubspotID, err))
		return false, ""
	case !ok:
		return false, ""
	case t.Kind == links.TombstoneMerged:
		return true, "merged into " + t.SurvivorID
	case t.Kind == links.TombstoneDeleted:
		return true, tombstonedDeleted
	}
	return false, ""
}

// outlivedDeletion reports whether r's record is still here although its
// object's deletion has been applied (a tombstone): a deletion deletes the
// record linked to the object, so one still here was not linked to it then.
// Unknown (a store error) counts as not: the record is left unwritten, as
// before this was asked.
func (c *cycle) outlivedDeletion(r *RecordPlan) bool {
	if c.w.cfg.LocalRecords == nil {
		return false
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	deleted, err := c.w.cfg.LocalRecords.Deleted(ctx, r.Key.ObjectType, r.Key.RecordID)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("outbound: is %s deleted: %w", r.Key, err))
		return false
	}
	return !deleted
}

// recordError settles one record that HubSpot refused.
func (c *cycle) recordError(op Op, r *RecordPlan, kind hubspot.Kind, msg, existingID string) {
	cfg := c.w.cfg
	if (kind == hubspot.KindValidation || kind == hubspot.KindConflict) && c.withoutOwed(op, r, msg) {
		return
	}
	switch kind {
	case hubspot.KindConflict:
		if existingID != "" && (op == OpCreate || op == OpUpsert) {
			// The object exists already: adopt it, and let the next cycle update
			// it by id instead of creating a duplicate. No attempt is used.
			ctx, cancel := c.storeCtx()
			err := cfg.Links.Link(ctx, cfg.Destination, r.Key.ObjectType, r.Key.RecordID, existingID)
			cancel()
			if errors.Is(err, links.ErrConflict) {
				c.fail(r, c.conflictMessage(r, existingID))
				return
			}
			if err != nil {
				// This record's trouble, not the cycle's: try it again later.
				c.w.log.Warn("outbound: could not record the adopted HubSpot object; will retry", "record", r.Key.String(), "hubspot_id", existingID, "err", err)
				c.retry([]*RecordPlan{r}, fmt.Sprintf("adopt HubSpot object %s: %v", existingID, err), 0)
				return
			}
			cfg.Metrics.add(&cfg.Metrics.adopted, 1)
			c.w.log.Info("outbound: adopted existing HubSpot object", "record", r.Key.String(), "hubspot_id", existingID)
			c.deletedMeanwhile([]*RecordPlan{r}, map[*RecordPlan]string{r: existingID})
			c.release([]*RecordPlan{r}, 0)
			return
		}
		c.fail(r, "HubSpot conflict: "+msg)
	case hubspot.KindNotFound:
		if op == OpArchive {
			c.succeed([]*RecordPlan{r}, nil) // already gone
			return
		}
		if tl, ok := cfg.Links.(TombstoneLinks); ok && op == OpUpdate {
			if gone, why := c.tombstoned(tl, r, r.HubSpotID); gone {
				// HubSpot deleted or merged the object away, and the inbound
				// side has applied it: the record was deleted, or re-pointed
				// to the survivor (then it is written there, planned again).
				ctx, cancel := c.storeCtx()
				now, linked, err := cfg.Links.Lookup(ctx, cfg.Destination, r.Key.ObjectType, r.Key.RecordID)
				cancel()
				switch {
				case err != nil:
					c.retry([]*RecordPlan{r}, "HubSpot object "+r.HubSpotID+" not found; look up the record's link: "+err.Error(), 0)
				case linked && now != r.HubSpotID:
					c.release([]*RecordPlan{r}, 0)
				default:
					c.w.log.Info("outbound: the record's HubSpot object is gone at the source; its local change is not written afresh",
						"record", r.Key.String(), "hubspot_id", r.HubSpotID, "reason", why)
					c.sum.Superseded += c.complete([]*RecordPlan{r})
				}
				return
			}
		}
		if ul, ok := cfg.Links.(Unlinker); ok && op == OpUpdate {
			wait, fresh := c.w.notFoundWait(r.Key)
			if fresh || wait == 0 {
				// Ask HubSpot what became of the object, once at the start of
				// the wait and again before writing afresh: a merged-away id
				// reads as its survivor.
				switch c.readGone(r) {
				case goneMerged, goneUnread:
					return // settled by readGone
				case goneLive:
					c.retry([]*RecordPlan{r}, "HubSpot answered 404 to the update of object "+r.HubSpotID+" but reads it: "+msg, 0)
					return
				}
			}
			if wait > 0 {
				// HubSpot deleted or merged the object away, and its webhook
				// has not been applied yet: keep the link, by which the
				// SyncWorker finds the record to delete or move to the
				// survivor (then the tombstone above supersedes this
				// update). Unlinked now, the record would outlive the
				// deletion, or its fresh upsert by email would find the
				// merge's survivor and write over it. Released, not
				// retried: the wait is no failure of the record's.
				c.w.log.Info("outbound: the record's HubSpot object is not found; waiting for HubSpot's deletion or merge of it before writing the record afresh",
					"record", r.Key.String(), "hubspot_id", r.HubSpotID, "wait", wait)
				c.release([]*RecordPlan{r}, wait)
				return
			}
			// No deletion or merge came: forget the link; the retry creates
			// (or upserts) the record afresh.
			ctx, cancel := c.storeCtx()
			err := ul.Unlink(ctx, cfg.Destination, r.Key.ObjectType, r.Key.RecordID)
			cancel()
			if err == nil {
				c.retry([]*RecordPlan{r}, "HubSpot object "+r.HubSpotID+" not found; unlinked, will write afresh: "+msg, 0)
				return
			}
			c.errs = append(c.errs, fmt.Errorf("outbound: unlink %s: %w", r.Key, err))
		}
		c.fail(r, "HubSpot object "+r.HubSpotID+" not found: "+msg)
	case hubspot.KindValidation:
		c.fail(r, "HubSpot rejected the record: "+msg)
	default:
		// 429, 423, 5xx, and per-input errors of a category this client
		// does not know: retry, ending as a dead letter after the store's
		// MaxAttempts if it never clears.
		c.retry([]*RecordPlan{r}, msg, 0)
	}
}

// withoutOwed makes an update that HubSpot refused again without the
// properties only its owed fields put in it (RecordPlan.OwedOnly), when it
// has others: the refusal may be of an owed value (one that was refused
// before and got its events dead-lettered), which would otherwise take every
// later change of the record down with it. The owed fields stay owed, for a
// later write once the value is fixed; if the record's own changes are
// refused too, they fail on their own. It reports whether it did.
func (c *cycle) withoutOwed(op Op, r *RecordPlan, msg string) bool {
	if op != OpUpdate || len(r.OwedOnly) == 0 || len(r.Properties) <= len(r.OwedOnly) {
		return false
	}
	c.w.log.Warn("outbound: HubSpot refused a write carrying owed fields; writing the record's own changes without them",
		"record", r.Key.String(), "owed_properties", strings.Join(r.OwedOnly, ","), "reason", msg)
	props := maps.Clone(r.Properties)
	for _, p := range r.OwedOnly {
		delete(props, p)
	}
	r.Properties, r.Owed, r.OwedOnly = props, nil, nil
	if r.Next != nil {
		next := *r.Next
		next.Carried = nil
		r.Next = &next
	}
	c.exec(op, r.HubSpotType, r.IDProperty, []*RecordPlan{r})
	return true
}

// results settles the records of a create, update or upsert answer.
func (c *cycle) results(op Op, recs []*RecordPlan, res *hubspot.BatchResult) {
	byTrace := map[string]*RecordPlan{}
	for _, r := range recs {
		byTrace[r.Key.RecordID] = r
	}
	settled := map[*RecordPlan]bool{}
	var unattributed []hubspot.BatchError
	for _, be := range res.Errors {
		r := byTrace[be.ObjectWriteTraceID]
		if r == nil || settled[r] {
			unattributed = append(unattributed, be)
			continue
		}
		settled[r] = true
		c.recordError(op, r, be.Kind(), be.Message, be.ExistingID)
	}
	ids := map[*RecordPlan]string{}
	var ok []*RecordPlan
	for _, obj := range res.Results {
		r := matchResult(op, recs, obj, settled)
		if r == nil {
			continue
		}
		settled[r] = true
		ids[r] = obj.ID
		r.answeredAt = obj.UpdatedAt
		ok = append(ok, r)
	}
	if op == OpUpsert {
		c.ownersFirst(ok, ids)
	}
	c.succeed(ok, ids)
	var unknown []*RecordPlan
	for _, r := range recs {
		if !settled[r] {
			unknown = append(unknown, r)
		}
	}
	if len(unknown) > 0 {
		msg := "HubSpot's answer did not mention the record"
		if len(unattributed) > 0 {
			msg += "; unattributed error: " + unattributed[0].Message
		}
		c.retry(unknown, msg, 0)
	}
}

// ownersFirst finds the records of an upsert's answer that HubSpot resolved
// to one object, and marks all but the object's own record (the one whose
// IDProperty value it held before these writes) to be linked after it
// (linkAfter). Two creates whose answers were lost, whose objects HubSpot
// then merged into each other, are retried as upserts; the merged-away
// object's email now finds the survivor, so both land there, and the later
// write replaced the survivor's email with its own. Linked in no particular
// order, the merged-away record could take the survivor's link: the other
// record then failed as a link conflict, and the merge's webhook, which looks
// for the merged object's record by the emails the survivor keeps, found no
// record, since the survivor's own email was gone from HubSpot. Which record
// made the object the answer cannot say; the history of the IDProperty can:
// the value it held before these writes (valueBefore). One read, under its
// own budget grant, on this rare path; without it (no HistoryReader, no
// budget or lease, a failed read, no record with that value) the records are
// linked as before.
func (c *cycle) ownersFirst(recs []*RecordPlan, ids map[*RecordPlan]string) {
	groups := map[string][]*RecordPlan{}
	var shared []string
	for _, r := range recs {
		id := ids[r]
		if id == "" || r.HubSpotID != "" {
			continue
		}
		groups[id] = append(groups[id], r)
		if len(groups[id]) == 2 {
			shared = append(shared, id)
		}
	}
	if len(shared) == 0 {
		return
	}
	hr, ok := c.w.cfg.HubSpot.(HistoryReader)
	if !ok {
		return
	}
	first := groups[shared[0]][0]
	t, idProperty := first.HubSpotType, first.IDProperty
	shared = shared[:min(len(shared), hubspot.MaxHistoryBatchInputs)]
	need := c.w.cfg.callLease()
	if c.leaseShort || !c.keep.Ensure(c.ctx, need) {
		c.leaseShort = true
		return
	}
	if !c.reserve(1, nil, need) {
		return
	}
	c.sum.Calls++
	ctx, cancel := c.callCtx(c.underGrant(c.ctx))
	res, err := hr.BatchReadWithHistory(ctx, t, shared, []string{idProperty}, []string{idProperty})
	err = c.callErr(ctx, err)
	cancel()
	c.countRateLimited(err)
	if err != nil {
		c.w.cfg.Metrics.call(OpReadOwner, outcomeOf(c.ctx, err))
		c.w.log.Warn("outbound: could not read whose object HubSpot resolved several records to; linking them in no particular order",
			"object_type", t, "hubspot_ids", shared, "err", err)
		return
	}
	c.w.cfg.Metrics.call(OpReadOwner, "ok")
	for _, obj := range res.Results {
		group := groups[obj.ID]
		made, ok := valueBefore(obj.History[idProperty], group)
		if !ok {
			continue
		}
		i := slices.IndexFunc(group, func(r *RecordPlan) bool { return strings.EqualFold(r.IDValue, made) })
		if i < 0 {
			continue
		}
		for j, r := range group {
			r.linkAfter = j != i
		}
		c.w.log.Info("outbound: HubSpot resolved several records to one object; the record whose email (id property) it held is linked first",
			"object_type", t, "hubspot_id", obj.ID, "record", group[i].Key.String(), "records", len(group))
	}
}

// valueBefore returns, from an IDProperty's versions (newest first), the
// value the object held before the writes of group's records: the newest
// version older than HubSpot's earliest answer to them (answeredAt, on
// HubSpot's clock), which is the value the merge left on the survivor, its
// maker's. When no version is older (or an answer had no time), it falls
// back to the oldest version, the value the object was created with.
func valueBefore(vs []hubspot.PropertyVersion, group []*RecordPlan) (string, bool) {
	if len(vs) == 0 {
		return "", false
	}
	var first time.Time
	for _, r := range group {
		if r.answeredAt.IsZero() {
			return vs[len(vs)-1].Value, true
		}
		if first.IsZero() || r.answeredAt.Before(first) {
			first = r.answeredAt
		}
	}
	for _, v := range vs {
		if !v.Timestamp.IsZero() && v.Timestamp.Before(first) {
			return v.Value, true
		}
	}
	return vs[len(vs)-1].Value, true
}

// matchResult finds the record a result object answers. HubSpot does not
// promise result order: updates match by id, upserts by IDProperty value,
// creates by an echoed trace id or else by properties. A created object holds
// every property its record sent, and HubSpot's defaults, so each record whose
// sent properties it all holds may be its own; it is the one that sent the
// most of them. Taking the first would let a record that sent {firstname: Bob}
// take the object of one that sent {firstname: Bob, lastname: Smith}, which
// then matches nothing, is retried, and is created twice.
func matchResult(op Op, recs []*RecordPlan, obj hubspot.Object, settled map[*RecordPlan]bool) *RecordPlan {
	for _, r := range recs {
		if settled[r] {
			continue
		}
		switch op {
		case OpUpdate:
			if r.HubSpotID == obj.ID {
				return r
			}
		case OpUpsert:
			if strings.EqualFold(obj.Properties[r.IDProperty], r.IDValue) {
				return r
			}
		case OpCreate:
			if obj.ObjectWriteTraceID != "" && obj.ObjectWriteTraceID == r.Key.RecordID {
				return r
			}
		}
	}
	if op != OpCreate || obj.ObjectWriteTraceID != "" {
		return nil
	}
	var best *RecordPlan
	for _, r := range recs {
		if !settled[r] && sameProperties(r.Properties, obj.Properties) && (best == nil || len(r.Properties) > len(best.Properties)) {
			best = r
		}
	}
	return best
}

func sameProperties(sent, got map[string]string) bool {
	for k, v := range sent {
		if !strings.EqualFold(strings.TrimSpace(got[k]), strings.TrimSpace(v)) {
			return false
		}
	}
	return true
}

// resolved archives the objects a read by IDProperty found, then completes
// every record of the call (one that was not found is not in HubSpot). An
// object linked to another local record is not the deleted record's: its
// write reached that object and was refused as a link conflict, or never
// reached HubSpot. It stays, and the record is done. (Links that are no
// RecordLookup cannot tell: the object found is archived.)
func (c *cycle) resolved(t hubspot.ObjectType, idProperty string, recs []*RecordPlan, res *hubspot.BatchResult) {
	found := map[string]string{} // lowercased IDProperty value → id
	for _, obj := range res.Results {
		found[strings.ToLower(obj.Properties[idProperty])] = obj.ID
	}
	var ids []string
	var hit, kept []*RecordPlan
	for _, r := range recs {
		id, ok := found[strings.ToLower(r.IDValue)]
		if ok {
			other, err := c.linkedElsewhere(r, id)
			if err != nil {
				c.retry([]*RecordPlan{r}, "look up the record linked to HubSpot object "+id+": "+err.Error(), 0)
				continue
			}
			if other != "" {
				c.w.log.Info("outbound: deleted record's HubSpot object belongs to another record; not archived",
					"record", r.Key.String(), "hubspot_id", id, "linked_record", other)
				ok = false
			}
		}
		kept = append(kept, r)
		if ok {
			r.HubSpotID = id
			ids = append(ids, id)
			hit = append(hit, r)
		}
	}
	recs = kept
	if len(ids) > 0 && c.grant.Late(c.w.cfg.Now()) {
		// The read took longer than the grant allows: the archive needs a
		// grant of its own, counted in the window it is made in.
		if !c.reserve(1, hit, c.w.cfg.callLease()) {
			c.succeed(unresolved(recs), nil)
			return
		}
	}
	if len(ids) > 0 && !c.keep.Ensure(c.ctx, c.w.cfg.callLease()) {
		// Too little lease left for the archive: the found records wait for
		// another cycle; the rest (not in HubSpot) are done.
		c.leaseShort = true
		c.release(hit, 0)
		c.succeed(unresolved(recs), nil)
		return
	}
	if len(ids) > 0 {
		c.sum.Calls++
		ctx, cancel := c.callCtx(c.underGrant(c.ctx))
		err := c.callErr(ctx, c.w.cfg.HubSpot.BatchArchive(ctx, t, ids))
		cancel()
		c.countRateLimited(err)
		if err != nil {
			c.w.cfg.Metrics.call(OpArchive, outcomeOf(c.ctx, err))
			c.callFailed(OpArchive, t, "", hit, err)
			var rest []*RecordPlan
			for _, r := range recs {
				if r.HubSpotID == "" {
					rest = append(rest, r)
				}
			}
			c.succeed(rest, nil)
			return
		}
		c.w.cfg.Metrics.call(OpArchive, "ok")
		c.tombstoneFound(t, hit)
	}
	c.succeed(recs, nil)
}

// tombstoneFound gives each object the resolve found and archived for a
// deleted record of hit (its create's answer was lost, so no link of it was
// ever stored) the local-delete tombstone its deletion would have written for
// a link (Config.LocalRecords.TombstoneDeleted). A HubSpot merge of another
// record's object into it, whose webhook comes after the archive, then takes
// that record with it, as it does for a linked object deleted here; without
// the tombstone, the merge would re-point that record to the archived object
// and leave it live, linked to nothing that exists.
//
// It runs after the archive, never before: a tombstone on an object whose
// archive then failed would stay on a live object with no link to guard it,
// one that another record's upsert by the same email may take, whose every
// change would then be judged stale. So a failure here (logged and counted
// as the cycle's; the records complete, their objects are archived) or a
// crash just before it leaves the merge's record as it was before this
// check existed, never a live object marked deleted.
func (c *cycle) tombstoneFound(t hubspot.ObjectType, hit []*RecordPlan) {
	dr := c.w.cfg.LocalRecords
	if dr == nil {
		return
	}
	types, byType := byObjectType(hit, func(*RecordPlan) bool { return true })
	ctx, cancel := c.storeCtx()
	defer cancel()
	for _, ot := range types {
		found := make(map[string]string, len(byType[ot]))
		for _, r := range byType[ot] {
			found[r.Key.RecordID] = r.HubSpotID
		}
		if _, err := dr.TombstoneDeleted(ctx, c.w.cfg.Destination, ot, found); err != nil {
			c.errs = append(c.errs, fmt.Errorf("outbound: mark the HubSpot %s objects just archived for %d deleted %s records as deleted here (a merge into one of them may leave its record live): %w", t, len(found), ot, err))
		}
	}
}

// succeed links created/adopted ids (before completing: after a crash in
// between, the retry updates by id instead of creating again), unlinks
// archived records, and completes every event of recs.
func (c *cycle) succeed(recs []*RecordPlan, ids map[*RecordPlan]string) int {
	if len(recs) == 0 {
		return 0
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	errs := c.w.storeLinks(ctx, recs, ids)
	var done []*RecordPlan
	for i, r := range recs {
		if errors.Is(errs[i], links.ErrConflict) {
			// Another local record is linked to the same HubSpot object: no
			// retry can fix that, so dead-letter instead of leaving the events
			// leased to be re-claimed forever.
			id := ids[r]
			if id == "" {
				id = r.HubSpotID
			}
			switch {
			case !c.deletedHere(r):
				if r.Op == OpUpsert || r.Op == OpResolveUpsert {
					// HubSpot resolved the record's email to an object
					// another record keeps and wrote the record over it: a
					// merge took away the object an earlier attempt made
					// (its answer lost; the merge's webhook, on its way,
					// deletes this record), or the email moved there.
					msg := c.upsertConflictMessage(r, id)
					if err := c.repairOverwrite(r, id); err != nil {
						msg = c.repairFailedMessage(r, id, err)
					}
					// Dead-lettered even if its fields cannot be owed:
					// tried again, the upsert would land on that object
					// again.
					c.failNow(r, msg)
					continue
				}
			case c.deletedAtSource(r):
				// HubSpot's merge took the record's object away while this
				// write was under way, and the merge, applied here, deleted
				// the record; HubSpot took the write onto the survivor, which
				// another local record keeps.
				if err := c.repairOverwrite(r, id); err != nil {
					// Completed, the record would leave its values on the
					// survivor with nothing to undo them. It is deleted
					// here, so it owes nothing.
					c.failEvents(r, c.repairFailedMessage(r, id, err))
					continue
				}
				c.complete([]*RecordPlan{r})
				continue
			default:
				// Deleted while its create was in flight, and a HubSpot change
				// of the new object, applied before this link, made a local
				// record of it: that record keeps the object (the deletion,
				// queued after, finds it linked to that record and leaves it).
				c.w.log.Info("outbound: the record was deleted while its HubSpot object was being created, and a HubSpot change of the object made another local record of it first; that record keeps it",
					"record", r.Key.String(), "hubspot_id", id)
				c.complete([]*RecordPlan{r})
				continue
			}
			c.fail(r, c.conflictMessage(r, id))
			continue
		}
		if errors.Is(errs[i], links.ErrLinkMoved) {
			// Written to an object the record is no longer linked to (merged
			// into another during the call): plan it again, against its link.
			c.w.log.Info("outbound: the record's link changed during the call; writing it again", "record", r.Key.String(), "err", errs[i])
			c.release([]*RecordPlan{r}, 0)
			continue
		}
		if errs[i] != nil {
			// A failure of this record's link, not of the cycle: retry the
			// record (an attempt, with backoff); the write its events carry is
			// repeated (idempotently for updates and upserts), and the other
			// records of the cycle complete.
			c.w.log.Warn("outbound: could not record what HubSpot accepted; will retry the record", "record", r.Key.String(), "err", errs[i])
			c.retry([]*RecordPlan{r}, "record the link: "+errs[i].Error(), 0)
			continue
		}
		done = append(done, r)
	}
	c.deletedMeanwhile(done, ids)
	c.mergedAway(done, ids)
	return c.complete(done)
}

// deletedHere reports whether r's record is deleted here, per
// Config.LocalRecords (false without it, or when it cannot say).
func (c *cycle) deletedHere(r *RecordPlan) bool {
	dr := c.w.cfg.LocalRecords
	if dr == nil {
		return false
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	gone, err := dr.Deleted(ctx, r.Key.ObjectType, r.Key.RecordID)
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("outbound: is %s deleted: %w", r.Key, err))
		return false
	}
	return gone
}

// deletedAtSource reports whether r's record was deleted by HubSpot's change
// (SourceDeletedRecords; false when LocalRecords cannot say).
func (c *cycle) deletedAtSource(r *RecordPlan) bool {
	sd, ok := c.w.cfg.LocalRecords.(SourceDeletedRecords)
	if !ok {
		return false
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	gone, err := sd.DeletedAtSource(ctx, c.w.cfg.Destination, r.Key.ObjectType, []string{r.Key.RecordID})
	if err != nil {
		c.errs = append(c.errs, fmt.Errorf("outbound: was %s deleted by HubSpot: %w", r.Key, err))
		return false
	}
	return slices.Contains(gone, r.Key.RecordID)
}

// repairOverwrite asks Config.LocalRecords (an OverwriteRepairer) to write
// the record that HubSpot object hubspotID is linked to over what r's write
// left there (see OverwriteRepairer), as of HubSpot's answer to it. It
// returns the error of a repair that was needed and could not be queued.
func (c *cycle) repairOverwrite(r *RecordPlan, hubspotID string) error {
	other, err := c.linkedElsewhere(r, hubspotID)
	if err != nil {
		err = fmt.Errorf("outbound: the record of HubSpot object %s: %w", hubspotID, err)
		c.errs = append(c.errs, err)
		return err
	}
	rep, ok := c.w.cfg.LocalRecords.(OverwriteRepairer)
	obj, mapped := c.w.cfg.Mapping.Lookup(r.Key.ObjectType)
	if other == "" || !ok || !mapped {
		c.w.log.Warn("outbound: HubSpot took the record's write onto an object another record keeps (a merge's survivor); nothing here can write that record over it again",
			"record", r.Key.String(), "hubspot_id", hubspotID)
		return nil
	}
	theirs, err := obj.FromHubSpot(r.Properties)
	if err == nil {
		ctx, cancel := c.storeCtx()
		err = rep.RepairOverwrite(ctx, r.Key.ObjectType, other, theirs, r.answeredAt)
		cancel()
	}
	if err != nil {
		err = fmt.Errorf("outbound: write %s/%s over what %s left on HubSpot object %s: %w", r.Key.ObjectType, other, r.Key, hubspotID, err)
		c.errs = append(c.errs, err)
		return err
	}
	c.w.log.Info("outbound: HubSpot took the record's write onto an object another record keeps (a merge's survivor); writing that record over it again",
		"record", r.Key.String(), "hubspot_id", hubspotID, "survivor_record", other)
	return nil
}

// repairFailedMessage is the dead letter of r when HubSpot took its write onto
// object hubspotID, which another record keeps, and writing that record over
// it again failed (err): nothing would try it again, so the operator is told.
func (c *cycle) repairFailedMessage(r *RecordPlan, hubspotID string, err error) string {
	other := c.linkedName(r, hubspotID)
	return fmt.Sprintf("HubSpot took the write of %s onto %s object %s, which %s keeps, and writing %s over it again failed (%v): "+
		"save %s again (any change) so that HubSpot holds its values, then discard this dead letter",
		r.Key, r.HubSpotType, hubspotID, other, other, err, other)
}

// deletedMeanwhile asks Config.LocalRecords to tombstone the objects just
// linked (ids) to records of recs deleted while their create was in flight
// (see records.Service.TombstoneDeleted); their deletion, queued after,
// archives the object. One call per object type; a failure is logged and
// counted as the cycle's, the records complete (the deletion still
// archives the object, only a HubSpot change before it is not held off).
func (c *cycle) deletedMeanwhile(recs []*RecordPlan, ids map[*RecordPlan]string) {
	dr := c.w.cfg.LocalRecords
	if dr == nil {
		return
	}
	types, byType := byObjectType(recs, func(r *RecordPlan) bool { return ids[r] != "" && ids[r] != r.HubSpotID })
	ctx, cancel := c.storeCtx()
	defer cancel()
	for _, t := range types {
		linked := make(map[string]string, len(byType[t]))
		for _, r := range byType[t] {
			linked[r.Key.RecordID] = ids[r]
		}
		gone, err := dr.TombstoneDeleted(ctx, c.w.cfg.Destination, t, linked)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("outbound: check %d %s records just linked for deletions: %w", len(linked), t, err))
			continue
		}
		for _, id := range gone {
			c.w.log.Info("outbound: the record was deleted while its HubSpot object was being created; the object is kept from bringing it back until the deletion archives it",
				"record", t+"/"+id, "hubspot_id", linked[id])
		}
	}
}

// byObjectType groups the records of recs that keep returns true for by
// object type, in order of first appearance.
func byObjectType(recs []*RecordPlan, keep func(*RecordPlan) bool) (types []string, byType map[string][]*RecordPlan) {
	byType = map[string][]*RecordPlan{}
	for _, r := range recs {
		if !keep(r) {
			continue
		}
		t := r.Key.ObjectType
		if byType[t] == nil {
			types = append(types, t)
		}
		byType[t] = append(byType[t], r)
	}
	return types, byType
}

// mergedAway asks, through Config.OnLinkedMergedAway, for the merge to be
// applied again for each record of recs just linked to an object it
// created (ids) that HubSpot had merged away before the link was stored.
// The check runs after the link committed, and the records service checks
// the merged ids' links after a merge commits: whichever of the two comes
// second sees the other. One query per object type (MergedMany).
func (c *cycle) mergedAway(recs []*RecordPlan, ids map[*RecordPlan]string) {
	tl, ok := c.w.cfg.Links.(TombstoneLinks)
	if !ok || c.w.cfg.OnLinkedMergedAway == nil {
		return
	}
	types, byType := byObjectType(recs, func(r *RecordPlan) bool { return ids[r] != "" })
	ctx, cancel := c.storeCtx()
	defer cancel()
	for _, t := range types {
		ext := make([]string, len(byType[t]))
		for i, r := range byType[t] {
			ext[i] = ids[r]
		}
		merged, err := tl.MergedMany(ctx, c.w.cfg.Destination, t, ext)
		if err != nil {
			c.errs = append(c.errs, fmt.Errorf("outbound: merged tombstones of %d new %s objects: %w", len(ext), t, err))
			continue
		}
		for _, r := range byType[t] {
			ts, ok := merged[ids[r]]
			if !ok {
				continue
			}
			c.w.log.Info("outbound: HubSpot merged the object away before its link was stored; applying the merge again",
				"record", r.Key.String(), "hubspot_id", ids[r], "survivor", ts.SurvivorID)
			if err := c.w.cfg.OnLinkedMergedAway(ctx, t, r.Key.RecordID, ids[r], ts); err != nil {
				c.errs = append(c.errs, fmt.Errorf("outbound: merge of %s's new object %s: %w", r.Key, ids[r], err))
			}
		}
	}
}

// complete marks every event of recs processed; it returns how many were.
func (c *cycle) complete(recs []*RecordPlan) int {
	var leases []store.Lease
	for _, r := range recs {
		leases = append(leases, r.Leases()...)
	}
	if len(leases) == 0 {
		return 0
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	err := c.w.cfg.Store.Complete(ctx, leases...)
	n := len(leases)
	var lost *store.LeaseLostError
	switch {
	case errors.As(err, &lost):
		n -= len(lost.Leases)
		c.w.cfg.Metrics.add(&c.w.cfg.Metrics.leaseLost, int64(len(lost.Leases)))
		c.w.log.Warn("outbound: leases lost before completion; another worker owns those events now", "lost", len(lost.Leases))
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("outbound: complete: %w", err))
		return 0
	}
	c.sum.Completed += n
	c.w.cfg.Metrics.add(&c.w.cfg.Metrics.completed, int64(n))
	for _, l := range leases {
		c.mark(l.ID, "completed")
	}
	if lost != nil {
		for _, l := range lost.Leases {
			c.mark(l.ID, "lease_lost")
		}
	}
	return n
}

// retry records a failed attempt for every event of recs, no sooner than
// minDelay. A record whose attempt was its last (dead-lettered) owes its
// fields: they reach HubSpot with the record's next write.
func (c *cycle) retry(recs []*RecordPlan, msg string, minDelay time.Duration) {
	ctx, cancel := c.storeCtx()
	defer cancel()
	for _, r := range recs {
		dead := false
		for _, e := range r.Events {
			res, err := c.w.cfg.Store.IncrementRetry(ctx, e.Lease(), msg, minDelay)
			dead = dead || (err == nil && res.Dead)
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				c.w.cfg.Metrics.add(&c.w.cfg.Metrics.leaseLost, 1)
			case err != nil:
				c.errs = append(c.errs, fmt.Errorf("outbound: retry %s: %w", e.ID, err))
			case res.Dead:
				c.sum.Failed++
				c.w.cfg.Metrics.add(&c.w.cfg.Metrics.dead, 1)
				c.mark(e.ID, "dead")
			default:
				c.sum.Retried++
				c.w.cfg.Metrics.add(&c.w.cfg.Metrics.retried, 1)
				c.mark(e.ID, "retried")
			}
		}
		if dead {
			c.oweDead(r)
		}
	}
}

// oweDead records the fields of r, whose events are dead-lettered already,
// as owed. When that fails nothing carries them: the error says how to send
// them (the dead letter is listed, and re-queued it is written again unless
// a later write of the record went out first).
func (c *cycle) oweDead(r *RecordPlan) {
	if err := c.owe(r); err != nil {
		c.errs = append(c.errs, err)
		c.w.log.Error("outbound: could not record the fields of a dead-lettered change as owed; the record's next write will not carry them: re-queue its dead letter now (hubsync dlq retry) to send them",
			"record", r.Key.String(), "err", err)
	}
}

// resolvedUpsert writes the records of a read by their earlier IDProperty
// values (OpResolveUpsert): a record whose earlier value found an object that
// no other record is linked to is linked to it and updated by id; the others
// are upserted by their latest value. Each write is a call of its own.
func (c *cycle) resolvedUpsert(t hubspot.ObjectType, idProperty string, recs []*RecordPlan, res *hubspot.BatchResult) {
	found := map[string]string{} // lowercased IDProperty value → id
	for _, obj := range res.Results {
		found[strings.ToLower(obj.Properties[idProperty])] = obj.ID
	}
	var updates, upserts []*RecordPlan
	for _, r := range recs {
		id := ""
		for _, v := range r.PriorIDValues {
			if id = found[strings.ToLower(v)]; id != "" {
				break
			}
		}
		if id != "" {
			other, err := c.linkedElsewhere(r, id)
			if err == nil && other == "" {
				ctx, cancel := c.storeCtx()
				err = c.w.cfg.Links.Link(ctx, c.w.cfg.Destination, r.Key.ObjectType, r.Key.RecordID, id)
				cancel()
			}
			if err != nil {
				c.retry([]*RecordPlan{r}, "link the record to HubSpot object "+id+" found by its earlier "+idProperty+": "+err.Error(), 0)
				continue
			}
			if other == "" {
				c.w.log.Info("outbound: found the object an earlier attempt created under an earlier "+idProperty,
					"record", r.Key.String(), "hubspot_id", id)
				r.Op, r.HubSpotID = OpUpdate, id
				updates = append(updates, r)
				continue
			}
		}
		r.Op = OpUpsert
		upserts = append(upserts, r)
	}
	if len(updates) > 0 {
		c.exec(OpUpdate, t, "", updates)
	}
	if len(upserts) > 0 {
		c.exec(OpUpsert, t, idProperty, upserts)
	}
}

// linkedElsewhere returns the local record other than r that HubSpot object
// hubspotID is linked to, if any; "" when Links is no RecordLookup.
func (c *cycle) linkedElsewhere(r *RecordPlan, hubspotID string) (string, error) {
	rl, ok := c.w.cfg.Links.(RecordLookup)
	if !ok {
		return "", nil
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	rec, found, err := rl.LookupRecord(ctx, c.w.cfg.Destination, r.Key.ObjectType, hubspotID)
	if err != nil || !found || rec == r.Key.RecordID {
		return "", err
	}
	return rec, nil
}

// conflictMessage describes a link conflict: HubSpot object hubspotID is
// linked to another local record than r.
func (c *cycle) conflictMessage(r *RecordPlan, hubspotID string) string {
	return fmt.Sprintf("link conflict: HubSpot %s object %s is already linked to %s, so %s cannot be linked to it "+
		"(two local records share one HubSpot object, e.g. one email); merge or fix the records, then re-queue",
		r.HubSpotType, hubspotID, c.linkedName(r, hubspotID), r.Key)
}

// upsertConflictMessage describes the link conflict of an upsert that
// HubSpot resolved, by r's id property value, to object hubspotID, which is
// linked to another local record than r.
func (c *cycle) upsertConflictMessage(r *RecordPlan, hubspotID string) string {
	other := c.linkedName(r, hubspotID)
	return fmt.Sprintf("link conflict: HubSpot resolved %s %q of %s to %s object %s, which is already linked to %s, and wrote this record over it; "+
		"%s is being written over it again. Most likely HubSpot merged the object an earlier attempt of this write created (its answer was lost) into %s, "+
		"and the merge's webhook deletes this record; if the record stays, give it another %s or merge it into %s, then re-queue",
		r.IDProperty, r.IDValue, r.Key, r.HubSpotType, hubspotID, other, other, hubspotID, r.IDProperty, other)
}

// linkedName names the local record HubSpot object hubspotID is linked to
// ("another local record" when linkedElsewhere cannot say).
func (c *cycle) linkedName(r *RecordPlan, hubspotID string) string {
	if rec, err := c.linkedElsewhere(r, hubspotID); err == nil && rec != "" {
		return "local record " + r.Key.ObjectType + "/" + rec
	}
	return "another local record"
}

// owe records, with OwedLinks, the local fields r's write would have set, so
// that the record's next successful write carries them after r's events are
// dead-lettered.
func (c *cycle) owe(r *RecordPlan) error {
	obj, ok := c.w.cfg.Mapping.Lookup(r.Key.ObjectType)
	if !ok {
		return nil
	}
	var fields []string
	for prop := range r.Properties {
		if f, ok := obj.LocalField(prop); ok {
			fields = append(fields, f.Local)
		}
	}
	return c.oweFields(r, fields)
}

// oweFields records, with OwedLinks, local fields of r's record as owed: the
// record's next successful write carries them. An error is the caller's to
// act on: until the fields are recorded nothing else carries them, so the
// caller gives the record's events back (oweOrRelease) or, where they must
// end regardless, says how to send the fields (oweDead).
func (c *cycle) oweFields(r *RecordPlan, fields []string) error {
	ol, ok := c.w.cfg.Links.(OwedLinks)
	if _, pushed := c.w.cfg.Links.(PushedLinks); !ok || !pushed || len(fields) == 0 {
		return nil
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	if err := ol.AddOwed(ctx, c.w.cfg.Destination, r.Key.ObjectType, r.Key.RecordID, fields); err != nil {
		return fmt.Errorf("outbound: record owed fields of %s: %w", r.Key, err)
	}
	return nil
}

// oweRetryDelay is how long a record waits when the fields it would owe could
// not be recorded (a store error): its events go back, unspent, rather than
// end without anything to carry their fields.
const oweRetryDelay = 30 * time.Second

// oweOrRelease records r's fields as owed (owe), or, when that fails, gives
// r's events back for oweRetryDelay and reports false.
func (c *cycle) oweOrRelease(r *RecordPlan, fields func() error) bool {
	if err := fields(); err != nil {
		c.errs = append(c.errs, err)
		c.w.log.Warn("outbound: could not record the fields the record's change owes; trying the record again later", "record", r.Key.String(), "err", err)
		c.release([]*RecordPlan{r}, oweRetryDelay)
		return false
	}
	return true
}

// fail dead-letters every event of r at once, once its fields are recorded
// as owed; when they cannot be, it gives the events back to be tried again.
func (c *cycle) fail(r *RecordPlan, msg string) {
	if c.oweOrRelease(r, func() error { return c.owe(r) }) {
		c.failEvents(r, msg)
	}
}

// failNow dead-letters every event of r, a record that must not be tried
// again, with its fields owed where they can be (oweDead).
func (c *cycle) failNow(r *RecordPlan, msg string) {
	c.oweDead(r)
	c.failEvents(r, msg)
}

// failEvents dead-letters every event of r.
func (c *cycle) failEvents(r *RecordPlan, msg string) {
	ctx, cancel := c.storeCtx()
	defer cancel()
	c.w.log.Warn("outbound: record failed", "record", r.Key.String(), "reason", msg)
	for _, e := range r.Events {
		err := c.w.cfg.Store.Fail(ctx, e.Lease(), msg)
		switch {
		case errors.Is(err, store.ErrLeaseLost):
			c.w.cfg.Metrics.add(&c.w.cfg.Metrics.leaseLost, 1)
		case err != nil:
			c.errs = append(c.errs, fmt.Errorf("outbound: fail %s: %w", e.ID, err))
		default:
			c.sum.Failed++
			c.w.cfg.Metrics.add(&c.w.cfg.Metrics.failed, 1)
			c.mark(e.ID, "failed")
		}
	}
}

// release gives the events of recs back without using an attempt.
func (c *cycle) release(recs []*RecordPlan, delay time.Duration) {
	var leases []store.Lease
	for _, r := range recs {
		leases = append(leases, r.Leases()...)
	}
	c.releaseLeases(leases, delay)
}

func (c *cycle) releaseEvents(evs []store.OutboundEvent, delay time.Duration) {
	leases := make([]store.Lease, len(evs))
	for i, e := range evs {
		leases[i] = e.Lease()
	}
	c.releaseLeases(leases, delay)
}

func (c *cycle) releaseLeases(leases []store.Lease, delay time.Duration) {
	if len(leases) == 0 {
		return
	}
	ctx, cancel := c.storeCtx()
	defer cancel()
	err := c.w.cfg.Store.Release(ctx, delay, leases...)
	n := len(leases)
	var lost *store.LeaseLostError
	switch {
	case errors.As(err, &lost):
		n -= len(lost.Leases)
	case err != nil:
		c.errs = append(c.errs, fmt.Errorf("outbound: release: %w", err))
		return
	}
	c.sum.Released += n
	c.w.cfg.Metrics.add(&c.w.cfg.Metrics.released, int64(n))
	for _, l := range leases {
		c.mark(l.ID, "released")
	}
}

// lookupLinks returns the known HubSpot ids of the records of evs, and with
// PushedLinks their pushed states: one query (each) per object type with
// BatchLinks, else one Lookup per record.
func (w *Worker) lookupLinks(ctx context.Context, evs []store.OutboundEvent) (map[RecordKey]string, map[RecordKey]links.Pushed, map[RecordKey][]string, error) {
	linked := map[RecordKey]string{}
	var pushed map[RecordKey]links.Pushed
	var owed map[RecordKey][]string
	var types []string
	byType := map[string][]string{}
	seen := map[RecordKey]bool{}
	for _, e := range evs {
		k := RecordKey{e.ObjectType, e.RecordID}
		if seen[k] {
			continue
		}
		seen[k] = true
		if byType[k.ObjectType] == nil {
			types = append(types, k.ObjectType)
		}
		byType[k.ObjectType] = append(byType[k.ObjectType], k.RecordID)
	}
	bl, batch := w.cfg.Links.(BatchLinks)
	pl, withPushed := w.cfg.Links.(PushedLinks)
	ol, withOwed := w.cfg.Links.(OwedLinks)
	withOwed = withOwed && withPushed // PushedMany clears what a write carried
	for _, t := range types {
		if withOwed {
			got, err := ol.LookupOwedMany(ctx, w.cfg.Destination, t, byType[t])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("outbound: look up owed fields of %d %s: %w", len(byType[t]), t, err)
			}
			for rec, f := range got {
				if owed == nil {
					owed = map[RecordKey][]string{}
				}
				owed[RecordKey{t, rec}] = f
			}
		}
		if withPushed {
			got, err := pl.LookupPushedMany(ctx, w.cfg.Destination, t, byType[t])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("outbound: look up pushed states of %d %s: %w", len(byType[t]), t, err)
			}
			if pushed == nil {
				pushed = map[RecordKey]links.Pushed{}
			}
			for rec, p := range got {
				pushed[RecordKey{t, rec}] = p
			}
		}
		if batch {
			got, err := bl.LookupMany(ctx, w.cfg.Destination, t, byType[t])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("outbound: look up links of %d %s: %w", len(byType[t]), t, err)
			}
			for rec, id := range got {
				linked[RecordKey{t, rec}] = id
			}
			continue
		}
		for _, rec := range byType[t] {
			id, ok, err := w.cfg.Links.Lookup(ctx, w.cfg.Destination, t, rec)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("outbound: look up link of %s/%s: %w", t, rec, err)
			}
			if ok {
				linked[RecordKey{t, rec}] = id
			}
		}
	}
	return linked, pushed, owed, nil
}

// storePushed records, with PushedLinks, the state HubSpot now holds of each
// record of recs that has one (its link, or for an archive its unlink, in the
// same transaction); one transaction per object type, and record by record
// when that fails (a conflict), so one bad link does not hold back the rest.
// It returns each record's error and whether it took care of the record.
func (w *Worker) storePushed(ctx context.Context, recs []*RecordPlan, ids map[*RecordPlan]string) (errs []error, handled []bool) {
	cfg := w.cfg
	errs, handled = make([]error, len(recs)), make([]bool, len(recs))
	pl, ok := cfg.Links.(PushedLinks)
	if !ok {
		return errs, handled
	}
	states := map[string][]links.Pushed{}
	idx := map[string][]int{}
	var types []string
	for i, r := range recs {
		if r.Next == nil {
			continue
		}
		st := *r.Next
		switch {
		case r.Op == OpArchive || r.Op == OpResolveArchive:
			st.ExternalID = "" // archived: unlink
		case ids[r] != "":
			st.ExternalID = ids[r]
		}
		if !st.Deleted && st.ExternalID == "" {
			continue // not in HubSpot as far as we know
		}
		if r.Op == OpUpdate {
			// Only if the record is still linked to the object updated: a
			// merge applied inbound during the call re-pointed it, and the
			// update's link must not be put back over the survivor's.
			st.LinkedTo = &r.HubSpotID
		}
		t := r.Key.ObjectType
		if states[t] == nil {
			types = append(types, t)
		}
		states[t] = append(states[t], st)
		idx[t] = append(idx[t], i)
		handled[i] = true
	}
	for _, t := range types {
		err := pl.PushedMany(ctx, cfg.Destination, t, states[t])
		if err == nil {
			continue
		}
		if len(states[t]) == 1 {
			errs[idx[t][0]] = err
			continue
		}
		w.log.Debug("outbound: batch pushed-state write failed; writing one by one", "object_type", t, "records", len(states[t]), "err", err)
		linkInPhases(recs, idx[t], func(k int) {
			errs[idx[t][k]] = pl.PushedMany(ctx, cfg.Destination, t, []links.Pushed{states[t][k]})
		})
	}
	return errs, handled
}

// linkInPhases runs write(k) for each k of 0…len(of)-1, linkParallelism at a
// time: first those whose record (recs[of[k]]) is not marked linkAfter, then
// the marked ones, so that the record that made an object is linked before
// the others HubSpot resolved to it (ownersFirst).
func linkInPhases(recs []*RecordPlan, of []int, write func(k int)) {
	for _, after := range []bool{false, true} {
		var wg sync.WaitGroup
		sem := make(chan struct{}, linkParallelism)
		for k := range of {
			if recs[of[k]].linkAfter != after {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				write(k)
			}()
		}
		wg.Wait()
	}
}

// storeLinks links the new ids of recs and unlinks the archived ones; it
// returns each record's error. With BatchLinks the links of one object type
// are one transaction; when it fails (a conflict), its records are linked one
// by one so that one bad link does not hold back the rest.
func (w *Worker) storeLinks(ctx context.Context, recs []*RecordPlan, ids map[*RecordPlan]string) []error {
	cfg := w.cfg
	var todo []int // indexes of recs that still need a Link or Unlink
	byType := map[string]map[string]string{}
	var types []string
	bl, batch := cfg.Links.(BatchLinks)
	errs, handled := w.storePushed(ctx, recs, ids)
	for i, r := range recs {
		if handled[i] {
			continue
		}
		switch {
		case r.Op == OpArchive || r.Op == OpResolveArchive:
			if _, ok := cfg.Links.(Unlinker); ok {
				todo = append(todo, i)
			}
		case ids[r] != "" && ids[r] != r.HubSpotID:
			if !batch {
				todo = append(todo, i)
				continue
			}
			t := r.Key.ObjectType
			if byType[t] == nil {
				byType[t] = map[string]string{}
				types = append(types, t)
			}
			byType[t][r.Key.RecordID] = ids[r]
		}
	}
	for _, t := range types {
		if err := bl.LinkMany(ctx, cfg.Destination, t, byType[t]); err != nil {
			w.log.Debug("outbound: batch link failed; linking one by one", "object_type", t, "records", len(byType[t]), "err", err)
			for i, r := range recs {
				if r.Key.ObjectType == t && byType[t][r.Key.RecordID] != "" && (r.Op != OpArchive && r.Op != OpResolveArchive) {
					todo = append(todo, i)
				}
			}
		}
	}
	linkInPhases(recs, todo, func(k int) {
		i := todo[k]
		r := recs[i]
		if r.Op == OpArchive || r.Op == OpResolveArchive {
			errs[i] = cfg.Links.(Unlinker).Unlink(ctx, cfg.Destination, r.Key.ObjectType, r.Key.RecordID)
			return
		}
		errs[i] = cfg.Links.Link(ctx, cfg.Destination, r.Key.ObjectType, r.Key.RecordID, ids[r])
	})
	return errs
}

// unresolved returns the records of recs that the resolve found no HubSpot
// object for: there is nothing to archive, so they are done.
func unresolved(recs []*RecordPlan) []*RecordPlan {
	var rest []*RecordPlan
	for _, r := range recs {
		if r.HubSpotID == "" {
			rest = append(rest, r)
		}
	}
	return rest
}

// notFoundWait returns how long an update of record key that met its
// object's 404 (no tombstone) waits before the record is written afresh: at
// most NotFoundWait, until NotFoundWaits of them have passed since the first
// 404; 0 when they have (the wait is then forgotten). fresh reports a wait
// that starts now. A record whose object HubSpot reads as merged away
// (notFoundMerged) waits NotFoundWait each time, for as long as it takes,
// its object read again every 10 × NotFoundWaits × NotFoundWait.
func (w *Worker) notFoundWait(key RecordKey) (wait time.Duration, fresh bool) {
	now := w.cfg.Now()
	total := time.Duration(NotFoundWaits) * w.cfg.NotFoundWait
	w.notFoundMu.Lock()
	defer w.notFoundMu.Unlock()
	if w.notFound == nil {
		w.notFound = map[RecordKey]notFound{}
	}
	for k, nf := range w.notFound { // forget waits long over (records resolved elsewhere)
		if now.Sub(nf.last) > 10*total {
			delete(w.notFound, k)
		}
	}
	nf, ok := w.notFound[key]
	if !ok {
		nf = notFound{first: now}
		fresh = true
	}
	nf.last = now
	w.notFound[key] = nf
	if nf.merged {
		if now.Sub(nf.first) < 10*total {
			return w.cfg.NotFoundWait, false
		}
		// Still not applied: read the object again (and log) once in a while.
		nf = notFound{first: now, last: now}
		w.notFound[key] = nf
		return min(total, w.cfg.NotFoundWait), true
	}
	left := total - now.Sub(nf.first)
	if left <= 0 {
		delete(w.notFound, key)
		return 0, false
	}
	return min(left, w.cfg.NotFoundWait), fresh
}

// notFoundMerged marks the wait of record key as one for a merge HubSpot
// has made (notFoundWait).
func (w *Worker) notFoundMerged(key RecordKey) {
	w.notFoundMu.Lock()
	defer w.notFoundMu.Unlock()
	now := w.cfg.Now()
	w.notFound[key] = notFound{first: now, last: now, merged: true}
}

// notFound is the wait of one record whose update met its object's 404.
type notFound struct {
	first, last time.Time // the first and latest 404 (Config.Now)
	merged      bool      // HubSpot reads the object as merged away
}

// A goneState is what HubSpot answers a read of an object an update met
// 404 for (readGone).
type goneState int

const (
	goneMissing goneState = iota // not found: deleted, or the read said nothing
	goneMerged                   // merged away; the record is released to wait
	goneLive                     // read under its own id: the 404 was not the object's
	goneUnread                   // not read (no budget, no lease, failed); the record is released or retried
)

// readGone reads r's object (one call, under its own budget grant) when its
// update met a 404 without a tombstone. A merged-away id reads as its
// survivor (HubSpot redirects merged ids), which lists the id in
// hs_merged_object_ids: the merge is then queued to be applied
// (Config.OnLinkedMergedAway, as its webhook would have), and the record
// released to wait for it, however long the SyncWorker takes (the tombstone
// it leaves settles the update). Written afresh instead, its upsert by
// email would find the survivor and write over it.
func (c *cycle) readGone(r *RecordPlan) goneState {
	cfg := c.w.cfg
	if _, ok := cfg.Links.(TombstoneLinks); !ok {
		return goneMissing // nothing would settle the wait
	}
	need := cfg.callLease()
	if c.leaseShort || !c.keep.Ensure(c.ctx, need) {
		c.leaseShort = true
		c.release([]*RecordPlan{r}, 0)
		return goneUnread
	}
	if !c.reserve(1, []*RecordPlan{r}, need) {
		return goneUnread // released by reserve
	}
	c.sum.Calls++
	ctx, cancel := c.callCtx(c.underGrant(c.ctx))
	res, err := cfg.HubSpot.BatchRead(ctx, r.HubSpotType, []string{r.HubSpotID}, []string{hubspot.MergedObjectIDsProperty}, "")
	err = c.callErr(ctx, err)
	cancel()
	c.countRateLimited(err)
	if err != nil {
		cfg.Metrics.call(OpReadGone, outcomeOf(c.ctx, err))
		if c.ctx.Err() != nil {
			c.release([]*RecordPlan{r}, 0) // our own stop: no attempt used
			return goneUnread
		}
		c.retry([]*RecordPlan{r}, "HubSpot object "+r.HubSpotID+" not found; reading what became of it: "+err.Error(), 0)
		return goneUnread
	}
	cfg.Metrics.call(OpReadGone, "ok")
	for _, obj := range res.Results {
		if obj.ID == r.HubSpotID {
			return goneLive
		}
		if !slices.Contains(obj.MergedObjectIDs(), r.HubSpotID) {
			continue
		}
		ts := links.Tombstone{
			Destination: cfg.Destination, ObjectType: r.Key.ObjectType, ExternalID: r.HubSpotID,
			Kind: links.TombstoneMerged, SurvivorID: obj.ID,
			// When the merge happened is not read; the survivor's last
			// change is after it, and no change of the merged id is.
			OccurredAt: obj.UpdatedAt,
		}
		if ts.OccurredAt.IsZero() {
			ts.OccurredAt = cfg.Now()
		}
		if cfg.OnLinkedMergedAway == nil {
			c.w.log.Warn("outbound: HubSpot merged the record's object away; waiting for the merge's webhook to be applied (Config.OnLinkedMergedAway would apply it now)",
				"record", r.Key.String(), "hubspot_id", r.HubSpotID, "survivor", obj.ID)
		} else {
			ctx, cancel := c.storeCtx()
			err := cfg.OnLinkedMergedAway(ctx, r.Key.ObjectType, r.Key.RecordID, r.HubSpotID, ts)
			cancel()
			if err != nil {
				c.retry([]*RecordPlan{r}, "HubSpot merged object "+r.HubSpotID+" into "+obj.ID+"; queue the merge: "+err.Error(), 0)
				return goneUnread
			}
			c.w.log.Info("outbound: HubSpot merged the record's object away; the merge is queued to be applied, and the record waits for it",
				"record", r.Key.String(), "hubspot_id", r.HubSpotID, "survivor", obj.ID)
		}
		c.w.notFoundMerged(r.Key)
		c.release([]*RecordPlan{r}, cfg.NotFoundWait)
		return goneMerged
	}
	return goneMissing
}
