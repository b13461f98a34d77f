package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

func TestDLQDiscardCommand(t *testing.T) {
	t.Parallel()
	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 2 {
		p, _ := outbox.Snapshot{ID: fmt.Sprint(i), Fields: map[string]any{}}.Marshal()
		if _, err := st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: fmt.Sprint(i), EventType: store.EventCreate, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := st.Outbound().Claim(ctx, store.ClaimParams{Key: "hubspot"})
	if err != nil || len(evs) != 2 {
		t.Fatalf("claim: %d, %v", len(evs), err)
	}
	for _, e := range evs {
		if err := st.Outbound().Fail(ctx, e.Lease(), "VALIDATION_ERROR: bad email"); err != nil {
			t.Fatal(err)
		}
	}
	env := baseEnv("HUBSYNC_DATABASE_URL=" + db.URL)
	if code, out, errOut := runCmd(t, env, "dlq", "discard", "-direction", "outbound", "-id", evs[0].ID); code == 0 || !strings.Contains(errOut, "reason") {
		t.Fatalf("dlq discard without -reason = %d\n%s%s; want a refusal naming the reason", code, out, errOut)
	}
	// Ids of another direction's queue (inbound here) match nothing: not a
	// silent success.
	for _, action := range [][]string{{"retry"}, {"discard", "-reason", "x"}} {
		args := append([]string{"dlq"}, action...)
		args = append(args, "-direction", "inbound", "-id", evs[0].ID)
		if code, out, errOut := runCmd(t, env, args...); code == 0 || !strings.Contains(errOut, "-direction") || !strings.Contains(errOut, evs[0].ID+": a dead letter of the outbound queue") {
			t.Fatalf("dlq %s of an outbound id as inbound = %d\n%s%s; want a failure naming -direction and the queue the id is in", action[0], code, out, errOut)
		}
	}
	if code, out, errOut := runCmd(t, env, "dlq", "discard", "-direction", "outbound", "-id", evs[0].ID, "-reason", "test contact"); code != 0 || !strings.Contains(out, "discarded 1") {
		t.Fatalf("dlq discard = %d\n%s%s", code, out, errOut)
	}
	got, err := ops.ListDiscarded(ctx, st, 0)
	if err != nil || len(got) != 1 || got[0].ID != evs[0].ID || got[0].Reason != "test contact" {
		t.Fatalf("discarded = %+v, %v", got, err)
	}
	// Some ids matched: done, and the others are said.
	if code, out, errOut := runCmd(t, env, "dlq", "discard", "-id", evs[1].ID+",no-such-id", "-reason", "x"); code != 0 || !strings.Contains(out, "discarded 1") || !strings.Contains(errOut, "no-such-id: no event has this id") {
		t.Fatalf("dlq discard of a dead letter and an unknown id = %d\n%s%s; want one discarded, the other named", code, out, errOut)
	}
	// Discarded already, or never an event's id: each is said.
	for id, want := range map[string]string{evs[0].ID: `a discarded outbound dead letter`, "no-such-id": "no event has this id"} {
		if code, out, errOut := runCmd(t, env, "dlq", "retry", "-id", id); code == 0 || !strings.Contains(errOut, id+": "+want) {
			t.Fatalf("dlq retry of %s = %d\n%s%s; want it to say %q", id, code, out, errOut, want)
		}
	}
}
