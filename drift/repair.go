package drift

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// repairFields repairs the differing fields of one record: the fields to
// send go in one outbound event, each field to apply locally is one inbound
// change.
func (s *Scanner) repairFields(ctx context.Context, obj mapping.Object, pol Policy, dry bool, r records.Record, o *hubspot.Object, diffs []*Difference, asOf time.Time) error {
	theirs := map[string]any{}
	var out []*Difference
	for _, d := range diffs {
		d.Repair = decide(d, pol)
		switch d.Repair {
		case ToHubSpot:
			f, _ := obj.LocalField(d.Property)
			v, err := obj.FromHubSpot(map[string]string{d.Property: d.HubSpot})
			if err != nil || f.Direction == mapping.ToHubSpotOnly {
				v = map[string]any{f.Local: d.HubSpot} // not parsed inbound: its text will do as "before"
			}
			theirs[f.Local] = v[f.Local]
			out = append(out, d)
		case ToLocal:
			if dry {
				continue
			}
			// The change carries HubSpot's timestamp, so the SyncWorker's
			// guard applies it only over an older local value; a policy that
			// overrides a newer local value carries the time the scan read it
			// (asOf), so a local edit made since still wins.
			at := asOf
			if d.Verdict == HubSpotNewer && d.HubSpotAt != nil {
				at = *d.HubSpotAt
			}
			if err := s.enqueueChange(ctx, obj, o.ID, d.Property, d.HubSpot, at, d); err != nil {
				return err
			}
		}
	}
	if len(out) == 0 || dry {
		return nil
	}
	if _, err := s.cfg.Records.Resend(ctx, obj.ObjectType, r.ID, theirs); err != nil {
		if errors.Is(err, records.ErrNotFound) {
			return nil // deleted since the page was read: its delete is queued
		}
		return fmt.Errorf("drift: repair %s/%s to HubSpot: %w", obj.ObjectType, r.ID, err)
	}
	for _, d := range out {
		d.Repaired = true
	}
	return nil
}

// resendWhole repairs a missing link: the whole record goes to HubSpot.
func (s *Scanner) resendWhole(ctx context.Context, obj mapping.Object, pol Policy, dry bool, d *Difference, r records.Record) error {
	d.Repair = decide(d, pol)
	if d.Repair != ToHubSpot || dry {
		return nil
	}
	if _, err := s.cfg.Records.Resend(ctx, obj.ObjectType, r.ID, nil); err != nil {
		if errors.Is(err, records.ErrNotFound) {
			return nil
		}
		return fmt.Errorf("drift: repair %s/%s to HubSpot: %w", obj.ObjectType, r.ID, err)
	}
	d.Repaired = true
	return nil
}

// enqueueChange enqueues a property change for the SyncWorker, as if HubSpot
// had sent it: the worker applies it under the monotonic guard, in the
// record's order, fenced by its lease. Its idempotency key is derived from
// the object, property, value and time, so a second scan finding the same
// drift before the first repair is applied enqueues nothing. It sets
// d.Repaired (see enqueueInbound).
func (s *Scanner) enqueueChange(ctx context.Context, obj mapping.Object, objectID, prop, value string, at time.Time, d *Difference) error {
	ms := at.UnixMilli()
	ev := inbound.Event{
		Version: inbound.EventVersion, Source: s.cfg.Destination,
		SubscriptionType: cmp.Or(obj.WebhookName, obj.ObjectType) + ".propertyChange",
		HubSpotObject:    cmp.Or(obj.WebhookName, obj.ObjectType), ObjectType: obj.ObjectType,
		EventType: store.EventUpdate, ObjectID: objectID, OccurredAt: ms,
		PropertyName: prop, PropertyValue: &value, ChangeSource: RepairSource,
	}
	key := repairKey("update", obj.ObjectType, objectID, prop, value, ms)
	return s.enqueueInbound(ctx, obj, objectID, store.EventUpdate, ev, key, d)
}

// enqueueCreation enqueues a creation of a HubSpot object for the SyncWorker,
// which reads the object and creates (or, by the id property, links) its
// record. It sets d.Repaired (see enqueueInbound).
func (s *Scanner) enqueueCreation(ctx context.Context, obj mapping.Object, o hubspot.Object, d *Difference) error {
	ms := max(o.UpdatedAt.UnixMilli(), o.CreatedAt.UnixMilli())
	ev := inbound.Event{
		Version: inbound.EventVersion, Source: s.cfg.Destination,
		SubscriptionType: cmp.Or(obj.WebhookName, obj.ObjectType) + ".creation",
		HubSpotObject:    cmp.Or(obj.WebhookName, obj.ObjectType), ObjectType: obj.ObjectType,
		EventType: store.EventCreate, ObjectID: o.ID, OccurredAt: ms, ChangeSource: RepairSource,
	}
	return s.enqueueInbound(ctx, obj, o.ID, store.EventCreate, ev, repairKey("create", obj.ObjectType, o.ID, "", "", ms), d)
}

// enqueueInbound enqueues a repair and marks d repaired when it is queued:
// enqueued now, or by an earlier scan and still waiting for the SyncWorker.
// An earlier scan's repair with the same key that already ran (processed, or
// a dead letter) and left the drift as it was is not a repair: d stays
// remaining, and its Reason says which event it was.
func (s *Scanner) enqueueInbound(ctx context.Context, obj mapping.Object, objectID, kind string, ev inbound.Event, key string, d *Difference) error {
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("drift: encode repair of %s %s: %w", obj.ObjectType, objectID, err)
	}
	res, err := s.cfg.Store.Inbound().Enqueue(ctx, store.InboundEvent{
		ID: newID(), Source: s.cfg.Destination, ExternalID: objectID, ObjectType: obj.ObjectType,
		EventType: kind, Payload: payload, IdempotencyKey: key,
	})
	if err != nil {
		return fmt.Errorf("drift: enqueue repair of %s %s: %w", obj.ObjectType, objectID, err)
	}
	if res.Inserted {
		d.Repaired = true
		return nil
	}
	earlier, err := s.cfg.Store.Inbound().Get(ctx, res.ID)
	if err != nil {
		return fmt.Errorf("drift: read the earlier repair of %s %s: %w", obj.ObjectType, objectID, err)
	}
	switch earlier.Status {
	case store.StatusPending, store.StatusProcessing:
		d.Repaired = true // queued by an earlier scan, not applied yet
	default:
		d.Reason += fmt.Sprintf("; an earlier scan queued this very repair (inbound event %s, now %s) and it did not fix it: see that event (hubsync dlq list -direction inbound), fix the cause and re-queue it", earlier.ID, earlier.Status)
	}
	return nil
}

func repairKey(parts ...any) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%v\x00", p)
	}
	return "drift:" + hex.EncodeToString(h.Sum(nil))[:40]
}

// read makes one HubSpot call after reserving it from the budget, waiting
// (on a timer, cancelled with ctx) while the budget refuses.
func (s *Scanner) read(ctx context.Context, rep *Report, call func() (*hubspot.BatchResult, error)) (*hubspot.BatchResult, error) {
	if err := s.reserve(ctx); err != nil {
		return nil, err
	}
	rep.HubSpotCalls++
	return call()
}

func (s *Scanner) reserve(ctx context.Context) error {
	if s.cfg.Budget == nil {
		return nil
	}
	for {
		res, err := s.cfg.Budget.Reserve(ctx, s.cfg.BudgetKey, 1)
		if err != nil {
			return fmt.Errorf("drift: budget: %w", err)
		}
		if res.Granted {
			return nil
		}
		wait := max(res.RetryAfter, 10*time.Millisecond)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
