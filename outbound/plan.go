package outbound

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// Op is what one record's coalesced events turn into.
type Op int

// The operations of a plan.
const (
	// OpNone completes the record's events without a call: nothing mapped
	// changed, the change came from HubSpot itself (anti-loop layer 3), or a
	// record that never reached HubSpot was deleted.
	OpNone Op = iota
	// OpFail dead-letters the record's events at once (unparsable snapshot,
	// unmapped object type): no retry can fix them.
	OpFail
	// OpUpdate updates a record whose HubSpot id is known, by id.
	OpUpdate
	// OpUpsert creates or updates by the mapping's IDProperty (contacts: email);
	// idempotent, so a retry after a crash never duplicates the object.
	OpUpsert
	// OpCreate creates a record with neither a known id nor an IDProperty value.
	OpCreate
	// OpArchive archives a record by its known HubSpot id.
	OpArchive
	// OpResolveArchive archives a deleted record whose id is unknown but whose
	// IDProperty value is: a batch read by that property finds the id first.
	OpResolveArchive
	// OpResolveUpsert upserts a record whose IDProperty value changed after an
	// attempt that may have created its object under an earlier value (the
	// answer was lost): a batch read by the earlier values finds that object
	// first, which is then linked and updated by id; a record without one is
	// upserted by its latest value. An upsert by the latest value alone would
	// create a second object.
	OpResolveUpsert
	// OpReadGone is never planned: it names (as a metric label) the read of
	// an object an update met 404 for, which tells a merge from a deletion.
	OpReadGone
	// OpReadOwner is never planned: it names (as a metric label) the read of
	// the IDProperty history of an object an upsert resolved two records to
	// (ownersFirst).
	OpReadOwner
)

var opNames = [...]string{"none", "fail", "update", "upsert", "create", "archive", "resolve_archive", "resolve_upsert", "read_gone", "read_owner"}

// String names the operation, e.g. "upsert"; also the metric label.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", int(o))
}

// RecordKey identifies a local record.
type RecordKey struct {
	ObjectType string
	RecordID   string
}

func (k RecordKey) String() string { return k.ObjectType + "/" + k.RecordID }

// RecordPlan is what one record's claimed events become.
type RecordPlan struct {
	Key RecordKey
	// Events are the record's claimed events in Seq order (the order the
	// database gave the record's changes); they complete, retry or fail
	// together.
	Events []store.OutboundEvent
	Op     Op
	// HubSpotType and IDProperty come from the record's mapping.
	HubSpotType hubspot.ObjectType
	IDProperty  string
	// HubSpotID is the known HubSpot id (OpUpdate, OpArchive).
	HubSpotID string
	// IDValue is the IDProperty value (OpUpsert, OpResolveArchive,
	// OpResolveUpsert).
	IDValue string
	// PriorIDValues are the earlier IDProperty values an attempt may have
	// created the object under (OpResolveUpsert).
	PriorIDValues []string
	// Properties are the HubSpot properties to write (OpUpdate, OpUpsert, OpCreate).
	Properties map[string]string
	// Owed are the owed local fields (BuildPlanOwed) the write carries.
	Owed []string
	// OwedOnly are the HubSpot properties of an OpUpdate that only the owed
	// fields put in Properties (the record's events did not change them).
	// When HubSpot refuses the write, it is made again without them, so that
	// a value HubSpot keeps refusing never blocks the record's own changes.
	OwedOnly []string
	// Reason says why OpNone or OpFail.
	Reason string
	// Superseded marks an OpNone whose events are not newer than the state
	// HubSpot already has (a re-queued or late event): completed without a call.
	Superseded bool
	// answeredAt is HubSpot's updatedAt in the answer to the record's write.
	answeredAt time.Time
	// linkAfter marks a record whose upsert HubSpot resolved to an object
	// another record of the same answer made (ownersFirst): its link is
	// stored after that record's, so that it, not the object's own record,
	// meets the link conflict.
	linkAfter bool
	// Next is the state HubSpot holds once the plan's write (or OpNone)
	// succeeds, for the worker to record (links.PushedMany); nil when there is
	// nothing to record (a failure, a superseded event, no known HubSpot id).
	// Its ExternalID is the linked id; the worker fills in a created one.
	Next *links.Pushed
}

// Leases returns the leases of the record's events.
func (r *RecordPlan) Leases() []store.Lease {
	out := make([]store.Lease, len(r.Events))
	for i, e := range r.Events {
		out[i] = e.Lease()
	}
	return out
}

// dupKey is the value two inputs of one call must not share: HubSpot rejects
// a batch naming the same IDProperty value (or, for contacts, email) twice.
func (r *RecordPlan) dupKey() string {
	if r.IDValue != "" {
		return strings.ToLower(r.IDValue)
	}
	if e := r.Properties["email"]; e != "" {
		return strings.ToLower(e)
	}
	return ""
}

// Call is one planned HubSpot batch call of at most hubspot.MaxBatchInputs records.
type Call struct {
	Op          Op
	HubSpotType hubspot.ObjectType
	IDProperty  string
	Records     []*RecordPlan
}

// Plan is the coalesced, batched form of a claimed set of events.
type Plan struct {
	// Records holds every record of the claim, in order of first appearance.
	Records []*RecordPlan
	// Calls groups the records that need HubSpot into batch calls.
	Calls []Call
}

// EstimateCalls is the most HubSpot calls the plan makes when nothing fails
// (seed 002's estimateHubSpotCalls): one per call, two for a
// resolve-then-archive call (the read, the archive), three for a
// resolve_upsert call (the read, an update of the objects found, an upsert
// of the others). The worker reserves each call from the budget as it makes
// it.
func (p Plan) EstimateCalls() int {
	n := 0
	for _, c := range p.Calls {
		switch c.Op {
		case OpResolveArchive:
			n += 2 // the read, the archive
		case OpResolveUpsert:
			n += 3 // the read, an update of the found, an upsert of the others
		default:
			n++
		}
	}
	return n
}

// Coalesced counts events that ride along with another event of their record
// instead of costing a write of their own.
func (p Plan) Coalesced() int {
	n := 0
	for _, r := range p.Records {
		n += len(r.Events) - 1
	}
	return n
}

// BuildPlan coalesces claimed events per record and groups the records into
// batch calls (seed 002's buildHubSpotPlan). A record's events are taken in
// Seq order, the order the database gave its changes (events without a Seq in
// the order given); links holds the known HubSpot id of each
// linked record; m maps local fields to HubSpot properties. BuildPlan is pure:
// it makes no calls.
//
// Per record, the events collapse into one write of the latest state:
//   - the last event is a delete → archive (OpArchive by id; OpResolveArchive
//     by IDProperty when the id is unknown; OpNone when the record never
//     reached HubSpot or HubSpot deleted it itself);
//   - otherwise, with a known id → update the properties that the claimed
//     local events changed (with the latest claimed values), and not back to
//     what HubSpot had before them; with no known id → upsert by IDProperty,
//     or create, with the full final snapshot (HubSpot may not have it at all).
//
// Sync-sourced events (produced by applying a change from HubSpot, seed §8.2
// layer 3) cost no call but still take part in ordering: HubSpot already holds
// the values they wrote, so a property whose last writer is such an event is
// not sent, while a local change to another property made before or after it
// is. "What HubSpot has" for a property is the value the last sync-sourced
// event gave it, or else its value before the first claimed event (earlier
// events completed only after HubSpot accepted them).
func BuildPlan(events []store.OutboundEvent, links map[RecordKey]string, m *mapping.Set) (Plan, error) {
	return BuildPlanPushed(events, links, nil, m)
}

// BuildPlanPushed is BuildPlan with the last state HubSpot accepted of each
// record (links.Pushed; a state that is not Current for the record's link is
// ignored). For a record whose last claimed event has a snapshot Version:
//   - events whose version is not newer than the pushed state's, and whose
//     Seq is not higher than its Seq, are superseded: OpNone without a call (a
//     re-queued dead letter keeps its Seq and must not set older values
//     again). Only without Seqs (states or events from before them) does the
//     creation date decide instead;
//   - otherwise events not newer than the pushed state are skipped, and the
//     write carries only what the remaining local events changed (never the
//     difference between the pushed state and the snapshot, which would echo
//     back changes HubSpot made itself).
//
// Snapshots without a Version (an application's own events may omit it) get
// BuildPlan's behaviour: event-by-event diffs, no superseding.
func BuildPlanPushed(events []store.OutboundEvent, linked map[RecordKey]string, pushed map[RecordKey]links.Pushed, m *mapping.Set) (Plan, error) {
	return BuildPlanOwed(events, linked, pushed, nil, m)
}

// BuildPlanOwed is BuildPlanPushed with the fields each record is owed
// (local field names of dead-lettered changes that no write carried yet; see
// links.Links.AddOwed): a record's next write (an update, or a full
// upsert/create) carries them with their latest values, and its Owed and
// Next.Carried name them so that the success clears them.
func BuildPlanOwed(events []store.OutboundEvent, linked map[RecordKey]string, pushed map[RecordKey]links.Pushed, owed map[RecordKey][]string, m *mapping.Set) (Plan, error) {
	if m == nil {
		return Plan{}, fmt.Errorf("outbound: BuildPlan needs a mapping set")
	}
	var plan Plan
	byKey := map[RecordKey]*RecordPlan{}
	for _, e := range events {
		k := RecordKey{e.ObjectType, e.RecordID}
		r := byKey[k]
		if r == nil {
			r = &RecordPlan{Key: k}
			byKey[k] = r
			plan.Records = append(plan.Records, r)
		}
		r.Events = append(r.Events, e)
	}
	for _, r := range plan.Records {
		// A claim hands a record's events out in Lane order, where a re-queued
		// dead letter comes after the changes queued before its requeue; the
		// changes themselves are ordered by Seq, so the highest Seq is the
		// latest. Events without a Seq (built by hand) keep the order they
		// came in.
		if !slices.ContainsFunc(r.Events, func(e store.OutboundEvent) bool { return e.Seq == 0 }) {
			slices.SortStableFunc(r.Events, func(a, b store.OutboundEvent) int { return cmp.Compare(a.Seq, b.Seq) })
		}
		var p *links.Pushed
		if st, ok := pushed[r.Key]; ok && st.Current(linked[r.Key]) {
			p = &st
		}
		planRecord(r, linked[r.Key], p, owed[r.Key], m)
	}
	plan.Calls = groupCalls(plan.Records)
	return plan, nil
}

type parsedEvent struct {
	ev       store.OutboundEvent
	old, new *outbox.Snapshot
	sync     bool
	version  int64 // the snapshot version after the event; 0 when unknown
}

func planRecord(r *RecordPlan, linkedID string, pushed *links.Pushed, owed []string, m *mapping.Set) {
	obj, ok := m.Lookup(r.Key.ObjectType)
	if !ok {
		r.Op, r.Reason = OpFail, fmt.Sprintf("no mapping for object type %q; add one to the mapping set", r.Key.ObjectType)
		return
	}
	r.HubSpotType, r.IDProperty = hubspot.ObjectType(obj.HubSpotType), obj.IDProperty
	evs := make([]parsedEvent, len(r.Events))
	for i, e := range r.Events {
		p := parsedEvent{ev: e}
		var err error
		if p.old, err = outbox.ParseSnapshot(e.OldPayload); err == nil {
			p.new, err = outbox.ParseSnapshot(e.Payload)
		}
		if err != nil {
			r.Op, r.Reason = OpFail, fmt.Sprintf("event %s: %v", e.ID, err)
			return
		}
		// The marker lives in the snapshot the change produced (a delete's
		// payload, when it has one, included).
		p.sync = p.new.SyncSourced(e.Destination)
		switch {
		case p.new != nil && p.new.Version > 0:
			p.version = p.new.Version
		case e.EventType == store.EventDelete && p.old != nil && p.old.Version > 0:
			p.version = p.old.Version + 1 // a delete without a payload
		}
		if e.EventType == store.EventDelete {
			p.new = nil // a delete leaves nothing, whatever its payload holds
		}
		evs[i] = p
	}
	last := evs[len(evs)-1]
	version := last.version
	var eventDate time.Time
	var seq int64
	for _, p := range evs {
		if p.ev.CreatedDate.After(eventDate) {
			eventDate = p.ev.CreatedDate
		}
		seq = max(seq, p.ev.Seq)
	}
	if version == 0 {
		pushed = nil // no order to judge by: BuildPlan's behaviour
	}
	if pushed != nil && pushed.Version > 0 && version <= pushed.Version && notAfter(seq, eventDate, pushed) {
		r.Op, r.Superseded = OpNone, true
		r.Reason = fmt.Sprintf("superseded: version %d is not newer than version %d, which HubSpot already has", version, pushed.Version)
		return
	}

	if last.ev.EventType == store.EventDelete {
		gone := &links.Pushed{RecordID: r.Key.RecordID, Version: version, Seq: seq, Deleted: true, EventDate: eventDate}
		switch {
		case last.sync:
			r.Op, r.Reason = OpNone, "deleted in HubSpot itself"
			gone.ExternalID = linkedID // HubSpot's own deletion keeps the link (inbound tombstones it)
		case linkedID != "":
			r.Op, r.HubSpotID = OpArchive, linkedID
		case idValue(obj, r.Key, lastState(evs)) != "" && !neverSent(evs):
			r.Op, r.IDValue = OpResolveArchive, idValue(obj, r.Key, lastState(evs))
		default:
			r.Op, r.Reason = OpNone, "never reached HubSpot"
		}
		r.Next = gone
		return
	}
	r.Next = &links.Pushed{RecordID: r.Key.RecordID, ExternalID: linkedID, Version: version, Seq: seq, Fields: last.new.Fields, EventDate: eventDate}
	if pushed != nil && pushed.Deleted {
		pushed = nil // a new life of the record: nothing of it is in HubSpot
	}

	// Only what the claimed local events themselves changed is sent, with the
	// latest claimed values: a field HubSpot changed (applied inbound, which
	// makes no event for HubSpot) is never echoed back, even when the pushed
	// state still holds its older value.
	latest, err := obj.ToHubSpot(last.new.Fields)
	if err != nil {
		r.Op, r.Reason = OpFail, fmt.Sprintf("event %s: %v", last.ev.ID, err)
		return
	}
	toSend, hubspotHas := map[string]string{}, map[string]string{}
	var baseline map[string]string // the values before the first considered event
	first := true
	for _, p := range evs {
		if pushed != nil && p.version > 0 && p.version <= pushed.Version && notAfter(p.ev.Seq, p.ev.CreatedDate, pushed) {
			continue // already in HubSpot's state
		}
		if first {
			first = false
			if p.old != nil {
				if baseline, err = obj.ToHubSpot(p.old.Fields); err != nil {
					r.Op, r.Reason = OpFail, fmt.Sprintf("event %s: %v", p.ev.ID, err)
					return
				}
			}
		}
		d, err := obj.Diff(fieldsOf(p.old), fieldsOf(p.new))
		if err != nil {
			r.Op, r.Reason = OpFail, fmt.Sprintf("event %s: %v", p.ev.ID, err)
			return
		}
		for prop, v := range d {
			if p.sync {
				delete(toSend, prop)
				hubspotHas[prop] = v
			} else if lv, ok := latest[prop]; ok {
				toSend[prop] = lv
			} else {
				toSend[prop] = v
			}
		}
	}
	// A record retried after an attempt that may have reached HubSpot (a
	// cycle that died, or lost HubSpot's answer, after the write and before
	// recording it) cannot trust what it knows of HubSpot's state: every
	// property its events touch goes with its latest value, even one equal to
	// the value before them.
	retried := mayHaveWritten(r.Events)
	for prop, v := range toSend {
		had, ok := hubspotHas[prop]
		if !ok {
			had = baseline[prop]
		}
		if had == v && !retried {
			delete(toSend, prop)
		}
	}
	// Fields owed by dead-lettered events go with the latest values, unless
	// HubSpot itself wrote them since.
	for _, name := range owed {
		for _, f := range obj.Fields {
			if f.Local != name || f.Direction == mapping.FromHubSpot {
				continue
			}
			if _, byHubSpot := hubspotHas[f.HubSpot]; !byHubSpot {
				if _, own := toSend[f.HubSpot]; !own {
					r.OwedOnly = append(r.OwedOnly, f.HubSpot)
				}
				toSend[f.HubSpot] = latest[f.HubSpot]
			}
		}
	}
	if len(toSend) == 0 {
		r.Op, r.Reason = OpNone, "no mapped property changed"
		return
	}
	r.Owed = owed
	r.Next.Carried = owed
	if linkedID != "" {
		r.Op, r.HubSpotID, r.Properties = OpUpdate, linkedID, toSend
		return
	}
	r.OwedOnly = nil // a full write: the owed fields are part of the record
	// Unknown to us: HubSpot may not have the object at all, so send all of it.
	full := latest
	for k, v := range full {
		if v == "" {
			delete(full, k) // clearing a property of a new object is noise
		}
	}
	if retried {
		// …unless an earlier attempt may have created it with a value the
		// events removed since: the upsert then clears it.
		for prop, v := range toSend {
			if v == "" {
				full[prop] = ""
			}
		}
	}
	r.Properties = full
	if v := idValue(obj, r.Key, last.new); v != "" {
		if obj.IDFromRecordID() {
			// HubSpot stores the id property of an object the upsert creates;
			// sending it says so explicitly.
			full[obj.IDProperty] = v
		}
		r.Op, r.IDValue = OpUpsert, v
		if retried {
			if r.PriorIDValues = priorIDValues(obj, r.Key, evs, v); len(r.PriorIDValues) > 0 {
				r.Op = OpResolveUpsert
			}
		}
		return
	}
	r.Op = OpCreate
}

// PriorIDValuesMax bounds the earlier IDProperty values a resolve_upsert
// reads per record (the newest ones), so that a call of
// resolveUpsertRecordsMax records reads at most hubspot.MaxBatchInputs ids.
const PriorIDValuesMax = 4

const resolveUpsertRecordsMax = hubspot.MaxBatchInputs / PriorIDValuesMax

// priorIDValues returns the IDProperty values other than latest that the
// events claimed before (whose writes may have reached HubSpot) carried, at
// most PriorIDValuesMax, the newest first.
func priorIDValues(obj mapping.Object, k RecordKey, evs []parsedEvent, latest string) []string {
	var out []string
	for i := len(evs) - 1; i >= 0 && len(out) < PriorIDValuesMax; i-- {
		p := evs[i]
		if p.ev.Attempt <= 1 && p.ev.RetryCount == 0 {
			continue
		}
		v := idValue(obj, k, p.new)
		if v != "" && !strings.EqualFold(v, latest) && !slices.ContainsFunc(out, func(o string) bool { return strings.EqualFold(o, v) }) {
			out = append(out, v)
		}
	}
	return out
}

// mayHaveWritten reports whether an earlier claim of one of evs may have
// written to HubSpot without its success being recorded: the event was claimed
// before (Attempt counts claims), or failed an attempt. A cycle that died
// after HubSpot applied its write, or lost HubSpot's answer, leaves exactly
// that; so does a plain release, for which the rule only costs a few
// properties sent again.
func mayHaveWritten(evs []store.OutboundEvent) bool {
	return slices.ContainsFunc(evs, func(e store.OutboundEvent) bool { return e.Attempt > 1 || e.RetryCount > 0 })
}

// notAfter reports whether a change with this Seq (and creation date) is not
// newer than the pushed state. Seqs are the database's order of the record's
// changes and never restart, so they decide whenever both sides have one; a
// re-queued dead letter keeps its Seq and so is recognised as old. Only a
// state or event from before sequences existed falls back to creation dates,
// which depend on the enqueueing processes' clocks.
func notAfter(seq int64, created time.Time, pushed *links.Pushed) bool {
	if seq > 0 && pushed.Seq > 0 {
		return seq <= pushed.Seq
	}
	return !created.After(pushed.EventDate)
}

func fieldsOf(s *outbox.Snapshot) map[string]any {
	if s == nil {
		return nil
	}
	return s.Fields
}

// lastState is the latest non-nil snapshot of the record.
func lastState(evs []parsedEvent) *outbox.Snapshot {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].new != nil {
			return evs[i].new
		}
		if evs[i].old != nil {
			return evs[i].old
		}
	}
	return nil
}

// idValue is the record's IDProperty value in snapshot s (the record id for
// mapping.RecordIDField, whatever s holds).
func idValue(obj mapping.Object, k RecordKey, s *outbox.Snapshot) string {
	if obj.IDProperty == "" || (s == nil && !obj.IDFromRecordID()) {
		return ""
	}
	return obj.IDValue(k.RecordID, fieldsOf(s))
}

// neverSent reports whether the record cannot be in HubSpot: its claimed
// history starts with a local create, and no event was ever claimed before
// (so no earlier attempt can have written it).
func neverSent(evs []parsedEvent) bool {
	if evs[0].ev.EventType != store.EventCreate || evs[0].old != nil {
		return false
	}
	for _, p := range evs {
		if p.ev.Attempt > 1 || p.sync {
			return false
		}
	}
	return true
}

// callCapacity is how many records one call of op carries.
func callCapacity(op Op) int {
	if op == OpResolveUpsert {
		return resolveUpsertRecordsMax // each reads up to PriorIDValuesMax ids
	}
	return hubspot.MaxBatchInputs
}

type callKey struct {
	op         Op
	t          hubspot.ObjectType
	idProperty string
}

// groupCalls packs the records that need HubSpot into calls of at most
// hubspot.MaxBatchInputs records, keeping records with the same dupKey in
// different calls.
func groupCalls(records []*RecordPlan) []Call {
	open := map[callKey][]int{} // indexes into calls
	var calls []Call
	keys := map[int]map[string]bool{}
	for _, r := range records {
		switch r.Op {
		case OpNone, OpFail:
			continue
		}
		ck := callKey{r.Op, r.HubSpotType, ""}
		if r.Op == OpUpsert || r.Op == OpResolveArchive || r.Op == OpResolveUpsert {
			ck.idProperty = r.IDProperty
		}
		dk := ""
		switch r.Op {
		case OpUpsert, OpCreate, OpResolveArchive, OpResolveUpsert:
			dk = r.dupKey()
		case OpUpdate:
			dk = r.HubSpotID // two records linked to one object (a merge) must not share a call
		}
		placed := false
		for _, ci := range open[ck] {
			if len(calls[ci].Records) >= callCapacity(r.Op) || (dk != "" && keys[ci][dk]) {
				continue
			}
			calls[ci].Records = append(calls[ci].Records, r)
			if dk != "" {
				keys[ci][dk] = true
			}
			placed = true
			break
		}
		if !placed {
			calls = append(calls, Call{Op: r.Op, HubSpotType: r.HubSpotType, IDProperty: ck.idProperty, Records: []*RecordPlan{r}})
			ci := len(calls) - 1
			open[ck] = append(open[ck], ci)
			keys[ci] = map[string]bool{}
			if dk != "" {
				keys[ci][dk] = true
			}
		}
	}
	return calls
}
