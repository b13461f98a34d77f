package outbox_test

import (
	"context"
	"testing"

	"github.com/hubsync/hubsync/outbox"
)

func TestSyncSource(t *testing.T) {
	ctx := context.Background()
	if got := outbox.SyncSource(ctx); got != "" {
		t.Fatalf("SyncSource(background) = %q, want empty", got)
	}
	if outbox.SkipDestination(ctx, "hubspot") {
		t.Fatal("a local change must be enqueued for every destination")
	}
	synced := outbox.WithSyncSource(ctx, "hubspot")
	if got := outbox.SyncSource(synced); got != "hubspot" {
		t.Fatalf("SyncSource = %q, want hubspot", got)
	}
	if !outbox.SkipDestination(synced, "hubspot") {
		t.Fatal("a change synced from hubspot must not go back to hubspot")
	}
	if outbox.SkipDestination(synced, "salesforce") {
		t.Fatal("a change synced from hubspot must still go to other destinations")
	}
}
