package outbox

import "context"

// SyncSourceHubSpot is the sync source (and destination) name of HubSpot.
const SyncSourceHubSpot = "hubspot"

// MetadataSyncSource is the metadata key under which an event records the sync
// source of the write that produced it (seed §8.2, layer 2).
const MetadataSyncSource = "sync_source"

type syncSourceKey struct{}

// WithSyncSource marks ctx as applying a change that came from source (for
// example "hubspot"). Writes made with this context are not enqueued back to that
// same destination: this is anti-loop layer 1 of the design. The marker travels
// into each event's metadata (layer 2), where the outbound worker checks it again
// (layer 3).
func WithSyncSource(ctx context.Context, source string) context.Context {
	return context.WithValue(ctx, syncSourceKey{}, source)
}

// SyncSource returns the sync source marked on ctx, or "" for a local change.
func SyncSource(ctx context.Context) string {
	s, _ := ctx.Value(syncSourceKey{}).(string)
	return s
}

// SkipDestination reports whether a change made under ctx must not be enqueued
// for destination, because it came from that destination's own sync.
func SkipDestination(ctx context.Context, destination string) bool {
	s := SyncSource(ctx)
	return s != "" && s == destination
}

// MetadataResent marks an event that sends a change which came from a
// destination back to it (the value names the destination), because a write
// of the record's may have overwritten it there (records' Resend). It is no
// sync source: the outbound worker sends it as a local change.
const MetadataResent = "resent_to"
