package hubsync_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync"
)

func TestSyncSource(t *testing.T) {
	ctx := context.Background()
	if got := hubsync.SyncSource(ctx); got != "" {
		t.Fatalf("SyncSource(background) = %q, want empty", got)
	}
	if hubsync.SkipDestination(ctx, "hubspot") {
		t.Fatal("a local change must be enqueued for every destination")
	}
	synced := hubsync.WithSyncSource(ctx, "hubspot")
	if got := hubsync.SyncSource(synced); got != "hubspot" {
		t.Fatalf("SyncSource = %q, want hubspot", got)
	}
	if !hubsync.SkipDestination(synced, "hubspot") {
		t.Fatal("a change synced from hubspot must not go back to hubspot")
	}
	if hubsync.SkipDestination(synced, "salesforce") {
		t.Fatal("a change synced from hubspot must still go to other destinations")
	}
}
