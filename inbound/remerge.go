package inbound

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// RemergeSource is the ChangeSource of a merge EnqueueMerge queues again.
const RemergeSource = "HUBSYNC_REMERGE"

// EnqueueMerge queues, for the SyncWorker, HubSpot's merge of merged into
// survivor at at again, as its webhook would have queued it. The outbound
// worker asks for it (outbound.Config.OnLinkedMergedAway) when it linked a
// record to an object it had just created that HubSpot had merged away
// before the link was stored: that merge's apply found no record for the
// merged id, so it moved nothing. Applied now, it re-points the record to
// the survivor (reading the survivor's values), or deletes it when the
// survivor has its own record. Once per (merged, survivor, at): a second
// call queues nothing.
func EnqueueMerge(ctx context.Context, q store.InboundRepository, source string, obj mapping.Object, survivor, merged string, at time.Time) error {
	ms := at.UnixMilli()
	name := cmp.Or(obj.WebhookName, obj.ObjectType)
	ev := Event{
		Version: EventVersion, Source: source,
		SubscriptionType: name + ".merge", HubSpotObject: name, ObjectType: obj.ObjectType,
		EventType: store.EventMerge, ObjectID: survivor, OccurredAt: ms, ChangeSource: RemergeSource,
		PrimaryObjectID: survivor, MergedObjectIDs: []string{merged},
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("inbound: encode the merge of %s %s into %s: %w", obj.ObjectType, merged, survivor, err)
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "remerge\x00%s\x00%s\x00%s\x00%s\x00%d", source, obj.ObjectType, merged, survivor, ms))
	if _, err := q.Enqueue(ctx, store.InboundEvent{
		ID: uuid.Must(uuid.NewV7()).String(), Source: source, ExternalID: survivor, ObjectType: obj.ObjectType,
		EventType: store.EventMerge, Payload: payload, IdempotencyKey: "remerge:" + hex.EncodeToString(sum[:]),
	}); err != nil {
		return fmt.Errorf("inbound: queue the merge of %s %s into %s again: %w", obj.ObjectType, merged, survivor, err)
	}
	return nil
}

// Remerger returns an outbound.Config.OnLinkedMergedAway that queues the
// merge again on q (EnqueueMerge) for the object types m maps, as serve
// sets it. m nil means mapping.Default().
func Remerger(q store.InboundRepository, m *mapping.Set) func(ctx context.Context, objectType, recordID, hubspotID string, t links.Tombstone) error {
	if m == nil {
		m = mapping.Default()
	}
	return func(ctx context.Context, objectType, _, hubspotID string, t links.Tombstone) error {
		obj, ok := m.Lookup(objectType)
		if !ok {
			return nil
		}
		return EnqueueMerge(ctx, q, t.Destination, obj, t.SurvivorID, hubspotID, t.OccurredAt)
	}
}
