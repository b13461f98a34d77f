package modeltest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"

	"github.com/hubsync/hubsync/records"
)

// kind is what a step does.
type kind int

const (
	localCreate kind = iota
	localUpdate
	localDelete
	hsCreate
	hsUpdate
	hsDelete
	hsMerge
	deliver   // deliver some captured webhooks: in order, out of order, twice, or dropped (HubSpot retries later)
	runIn     // one inbound worker cycle
	runOut    // one outbound worker cycle
	crashIn   // an inbound cycle whose process dies mid-cycle
	crashOut  // an outbound cycle whose process dies mid-cycle
	tick      // time passes, sometimes past every lease
	kindCount // the number of kinds
)

var kindNames = [...]string{"local-create", "local-update", "local-delete", "hs-create", "hs-update", "hs-delete", "hs-merge",
	"deliver", "run-inbound", "run-outbound", "crash-inbound", "crash-outbound", "tick"}

// deliver modes.
const (
	inOrder = iota
	reordered
	duplicated
	dropped
	modeCount
)

var modeNames = [...]string{"in-order", "reordered", "duplicated", "dropped"}

// step is one action of a run. Its choices (A, B) are indexes taken modulo
// whatever exists when the step runs, so any subsequence of a trace is a
// valid trace: that is what shrinking relies on.
type step struct {
	Kind    kind
	Replica int
	Type    int // index into objectTypes
	A, B    int
	Field   int
	Mode    int
	Value   string
	Advance time.Duration
}

func (s step) String() string {
	typ := objectTypes[s.Type]
	switch s.Kind {
	case localCreate:
		return fmt.Sprintf("replica %d: create %s", s.Replica, typ)
	case localUpdate:
		if s.B%5 == 0 {
			return fmt.Sprintf("replica %d: update %s #%d remove %s", s.Replica, typ, s.A, editable[typ][s.Field%len(editable[typ])][0])
		}
		return fmt.Sprintf("replica %d: update %s #%d %s=%q", s.Replica, typ, s.A, editable[typ][s.Field%len(editable[typ])][0], s.Value)
	case localDelete:
		return fmt.Sprintf("replica %d: delete %s #%d", s.Replica, typ, s.A)
	case hsCreate:
		return fmt.Sprintf("HubSpot user: create %s", typ)
	case hsUpdate:
		return fmt.Sprintf("HubSpot user: update %s #%d %s=%q", typ, s.A, editable[typ][s.Field%len(editable[typ])][1], s.Value)
	case hsDelete:
		return fmt.Sprintf("HubSpot user: delete %s #%d", typ, s.A)
	case hsMerge:
		return fmt.Sprintf("HubSpot user: merge contacts #%d into #%d", s.B, s.A)
	case deliver:
		return fmt.Sprintf("replica %d: receive %d webhooks from #%d, %s", s.Replica, s.B, s.A, modeNames[s.Mode])
	case runIn:
		return fmt.Sprintf("replica %d: inbound cycle", s.Replica)
	case runOut:
		return fmt.Sprintf("replica %d: outbound cycle", s.Replica)
	case crashIn, crashOut:
		which, when := "inbound", "before"
		if s.Kind == crashOut {
			which = "outbound"
		}
		if s.Mode%2 == 1 {
			when = "after" // unless gapCrashAfterWrite is avoided
		}
		return fmt.Sprintf("replica %d: %s cycle, dies %s HubSpot call %d", s.Replica, which, when, s.A)
	case tick:
		return fmt.Sprintf("time passes %s", s.Advance)
	}
	return "?"
}

// weights of the kinds in generated runs.
var weights = [kindCount]int{
	localCreate: 6, localUpdate: 12, localDelete: 3,
	hsCreate: 4, hsUpdate: 10, hsDelete: 2, hsMerge: 2,
	deliver: 14, runIn: 10, runOut: 10, crashIn: 2, crashOut: 2, tick: 4,
}

// generate makes a run of n steps from seed.
func generate(seed uint64, n, replicas int, gaps map[int]bool) []step {
	rng := rand.New(rand.NewPCG(seed, 0x6d6f64656c))
	total := 0
	for _, w := range weights {
		total += w
	}
	var out []step
	for range n {
		x := rng.IntN(total)
		k := kind(0)
		for ; x >= weights[k]; k++ {
			x -= weights[k]
		}
		s := step{
			Kind: k, Replica: rng.IntN(replicas), Type: rng.IntN(len(objectTypes)),
			A: rng.IntN(1000), B: rng.IntN(1000), Field: rng.IntN(8), Mode: rng.IntN(modeCount),
			Value: fmt.Sprintf("v%d", rng.IntN(1000)),
		}
		switch k {
		case hsMerge:
			s.Type = 0
		case deliver:
			s.B = 1 + rng.IntN(6)
		case crashIn, crashOut:
			s.A = rng.IntN(3)
		case tick:
			if rng.IntN(3) == 0 {
				s.Advance = leaseDuration + time.Duration(rng.IntN(5000))*time.Millisecond
			} else {
				s.Advance = time.Duration(1+rng.IntN(3000)) * time.Millisecond
			}
		}
		out = append(out, s)
	}
	return out
}

// run executes the steps; it returns an error when a step could not run at
// all (an infrastructure failure, not a finding).
func (w *world) run(steps []step) error {
	for i, s := range steps {
		if err := w.do(s); err != nil {
			return fmt.Errorf("step %d (%s): %w", i, s, err)
		}
	}
	return nil
}

// liveLocal lists the live local records of a type, in id order.
func (w *world) liveLocal(typ string) []records.Record {
	all, err := w.reps[0].recs.List(w.ctx, typ, records.ListOptions{Limit: records.ListLimitMax})
	if err != nil {
		w.t.Fatal(err)
	}
	return all
}

func (w *world) do(s step) error {
	ctx := w.ctx
	typ := objectTypes[s.Type]
	r := w.reps[s.Replica%len(w.reps)]
	// Local actions move time a little (replicas race within their skew);
	// HubSpot's users act a clear second apart from everything else.
	switch s.Kind {
	case hsCreate, hsUpdate, hsDelete, hsMerge:
		w.clk.advance(hubspotGap)
		defer w.clk.advance(hubspotGap)
	default:
		if w.gaps[gapOrder] {
			// Item 1 unfixed: local writes far enough apart that no skew
			// reorders them.
			w.clk.advance(3 * maxSkew)
		} else {
			w.clk.advance(time.Duration(1+s.A%20) * time.Millisecond)
		}
	}
	switch s.Kind {
	case localCreate:
		w.created++
		fields := map[string]any{}
		for _, f := range editable[typ] {
			fields[f[0]] = fmt.Sprintf("%s-%d", f[0], w.created)
		}
		if typ == "contacts" {
			fields["email"] = fmt.Sprintf("local%d@model.test", w.created)
		}
		_, err := r.recs.Insert(ctx, typ, fields)
		return err
	case localUpdate, localDelete:
		live := w.liveLocal(typ)
		if len(live) == 0 {
			return nil
		}
		rec := live[s.A%len(live)]
		if w.gated(s.Kind, typ, rec.ID, "") {
			return nil
		}
		var err error
		if s.Kind == localUpdate {
			f := editable[typ][s.Field%len(editable[typ])][0]
			var v any = s.Value
			if s.B%5 == 0 {
				v = nil // the field is removed (HubSpot's property cleared)
			}
			_, err = r.recs.Update(ctx, typ, rec.ID, rec.Version, map[string]any{f: v})
		} else {
			err = r.recs.Delete(ctx, typ, rec.ID, rec.Version)
			if err == nil {
				w.deletedLocal[rec.ID] = typ
			}
		}
		if errors.Is(err, records.ErrConflict) || errors.Is(err, records.ErrNotFound) {
			return nil
		}
		return err
	case hsCreate:
		w.created++
		props := map[string]string{}
		for _, f := range editable[typ] {
			props[f[1]] = fmt.Sprintf("%s-hs%d", f[1], w.created)
		}
		if typ == "contacts" {
			props["email"] = fmt.Sprintf("hubspot%d@model.test", w.created)
		}
		_, err := w.sim.UserCreate(typ, props)
		w.settleSim()
		return err
	case hsUpdate, hsDelete, hsMerge:
		objs := w.sim.Objects(typ)
		if len(objs) == 0 {
			return nil
		}
		o := objs[s.A%len(objs)]
		if s.Kind != hsMerge && w.gated(s.Kind, typ, "", o.ID) {
			return nil
		}
		var err error
		switch s.Kind {
		case hsUpdate:
			err = w.sim.UserUpdate(typ, o.ID, map[string]string{editable[typ][s.Field%len(editable[typ])][1]: s.Value})
		case hsDelete:
			if err = w.sim.UserDelete(typ, o.ID); err == nil {
				w.deletedHS[o.ID] = typ
			}
		case hsMerge:
			m := objs[s.B%len(objs)]
			// The survivor takes the merge like an edit (a survivor whose
			// create is unrecorded is matched to its record by email); the
			// merged-away object is gone like a deletion.
			if m.ID == o.ID || w.gated(s.Kind, typ, "", m.ID) || w.gated(hsUpdate, typ, "", o.ID) || (w.gaps[gapMergeMoves] && w.movesMapped(typ, o.Properties, m.Properties)) {
				return nil
			}
			lost := w.mergedLost[m.ID] || w.unrecorded(typ, m.ID)
			if w.gaps[gapUnrecordedSiblings] && lost && w.mergedLost[o.ID] {
				return nil
			}
			if err = w.sim.UserMerge(typ, o.ID, m.ID); err == nil {
				w.mergedHS[m.ID] = true
				if lost {
					w.mergedLost[o.ID] = true
				}
			}
		}
		w.settleSim()
		return err
	case deliver:
		w.settleSim()
		w.mu.Lock()
		if len(w.pool) == 0 {
			w.mu.Unlock()
			return nil
		}
		start := s.A % len(w.pool)
		if s.Mode == inOrder {
			start = 0
		}
		end := min(len(w.pool), start+s.B)
		evs := slices.Clone(w.pool[start:end])
		w.pool = slices.Delete(w.pool, start, end)
		if s.Mode == dropped {
			w.retry = append(w.retry, evs...)
			w.mu.Unlock()
			return nil
		}
		w.mu.Unlock()
		if s.Mode == reordered {
			slices.Reverse(evs)
		}
		times := 1
		if s.Mode == duplicated {
			times = 2
		}
		for range times {
			if code := w.deliver(r, evs); code/100 != 2 {
				// HubSpot retries a refused delivery.
				w.mu.Lock()
				w.retry = append(w.retry, evs...)
				w.mu.Unlock()
				return nil
			}
		}
		return nil
	// A cycle's error is not the model's: the workers record per-event
	// failures on the events, and quiescence shows whether anything is stuck.
	case runIn:
		_, _ = r.in.RunOnce(ctx)
		return nil
	case runOut:
		_, _ = r.out.RunOnce(ctx)
		return nil
	case crashIn, crashOut:
		after := s.Mode%2 == 1 && !w.gaps[gapCrashAfterWrite]
		w.crashRun(r, s.Kind == crashOut, s.A, after)
		return nil
	case tick:
		w.clk.advance(s.Advance)
		return nil
	}
	return nil
}

// movesMapped says whether merging merged into primary copies a mapped
// property (item 8: the moved values never reach the local record).
func (w *world) movesMapped(typ string, primary, merged map[string]string) bool {
	obj, _ := w.m.Lookup(typ)
	for _, f := range obj.Fields {
		if f.HubSpot == "email" {
			continue
		}
		if merged[f.HubSpot] != "" && primary[f.HubSpot] == "" {
			return true
		}
	}
	return false
}

// trace renders steps one per line.
func trace(steps []step) string {
	var b strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&b, "  %3d  %s\n", i, s)
	}
	return b.String()
}

// gated says whether a known gap (modelKnownGaps) rules the step out: it
// would act on a record whose other side still has a change in flight, in a
// way the unfixed code cannot converge from.
func (w *world) gated(k kind, typ, recordID, hubspotID string) bool {
	if recordID == "" {
		recordID, _, _ = w.lk.LookupRecord(w.ctx, "hubspot", typ, hubspotID)
	}
	if hubspotID == "" {
		hubspotID, _, _ = w.lk.Lookup(w.ctx, "hubspot", typ, recordID)
	}
	switch k {
	case hsUpdate, hsDelete, hsMerge:
		// An edit of an object hubsync created whose link is not recorded: its
		// create's answer was lost (gapUnlinkedEdit).
		if w.gaps[gapUnlinkedEdit] && recordID == "" && w.createdByHubsync(typ, hubspotID) {
			return true
		}
		// The same object changed in HubSpot while its create, which reached
		// HubSpot, still waits to be recorded (the create is a local change in
		// flight, and its retry, an upsert of the created values, overwrites
		// the edit), or while a local change waits to be pushed (the push
		// later overwrites HubSpot's newer value, whose webhook wins
		// locally): an edit is gapTwoSided (fixed: the applied edit is sent
		// back), a deletion or merge gapUnrecordedGone when the create is
		// unrecorded, else gapTwoSidedGone (fixed).
		unrecorded := recordID == "" && w.createdByHubsync(typ, hubspotID)
		inFlight := unrecorded || (recordID != "" && w.outboundOpen(typ, recordID))
		switch {
		case k == hsUpdate:
			return w.gaps[gapTwoSided] && inFlight
		case unrecorded:
			return w.gaps[gapUnrecordedGone]
		}
		return w.gaps[gapTwoSidedGone] && inFlight
	case localUpdate:
		// A local edit while HubSpot's delete of the object is in flight: the
		// push recreates the object the delete then orphans.
		return w.gaps[gapTwoSidedGone] && hubspotID != "" && w.inboundOpen(typ, hubspotID)
	case localDelete:
		// Item 3: a HubSpot change in flight when the record is deleted locally.
		return w.gaps[gapLocalDelete] && hubspotID != "" && w.inboundOpen(typ, hubspotID)
	}
	return false
}

// unrecorded says whether HubSpot object id was made by hubsync and no
// record is linked to it: its create's answer was lost.
func (w *world) unrecorded(typ, id string) bool {
	rec, _, _ := w.lk.LookupRecord(w.ctx, "hubspot", typ, id)
	return rec == "" && w.createdByHubsync(typ, id)
}

// outboundOpen says whether the record has outbound events not yet done.
func (w *world) outboundOpen(typ, recordID string) bool {
	return w.count(`SELECT COUNT(*) FROM _System_IntegrationOutbound WHERE ObjectType = ? AND RecordID = ? AND Status IN ('pending', 'processing')`, typ, recordID) > 0
}

// createdByHubsync says whether HubSpot object id was created by a replica's
// push: a company carries its local record id, a contact a local email.
func (w *world) createdByHubsync(typ, id string) bool {
	o, ok := w.sim.Object(typ, id)
	if !ok {
		return false
	}
	return o.Properties[mapping.RecordIDProperty] != "" || strings.HasPrefix(o.Properties["email"], "local")
}

// inboundOpen says whether HubSpot has a change of the object not yet applied:
// a webhook not yet delivered or an inbound event not yet done.
func (w *world) inboundOpen(typ, hubspotID string) bool {
	w.settleSim()
	w.mu.Lock()
	for _, ev := range append(slices.Clone(w.pool), w.retry...) {
		if strconv.FormatInt(ev.ObjectID, 10) == hubspotID || slices.Contains(ev.MergedObjectIDs, atoi(hubspotID)) {
			w.mu.Unlock()
			return true
		}
	}
	w.mu.Unlock()
	return w.count(`SELECT COUNT(*) FROM _System_IntegrationInbound WHERE ExternalID = ? AND Status IN ('pending', 'processing')`, hubspotID) > 0
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func (w *world) count(query string, args ...any) int {
	if w.db.Dialect == store.Postgres {
		for i := 1; strings.Contains(query, "?"); i++ {
			query = strings.Replace(query, "?", "$"+strconv.Itoa(i), 1)
		}
	}
	var n int
	if err := w.db.DB.QueryRowContext(w.ctx, query, args...).Scan(&n); err != nil {
		w.t.Fatal(err)
	}
	return n
}
