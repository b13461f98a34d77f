package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// setupDialect is setupOps on any dialect.
func setupDialect(t *testing.T, d store.Dialect) opsBundle {
	t.Helper()
	db := dbtest.Migrated(t, d)
	clock := storetest.NewClock(time.Time{})
	st, err := hubsync.NewStore(db.DB, d, store.Config{Now: clock.Now, Retry: store.RetryPolicy{MaxAttempts: 1, NoJitter: true}})
	if err != nil {
		t.Fatal(err)
	}
	return opsBundle{st: st, clock: clock}
}

func TestDiscardDeadLetters(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d)
		ctx := context.Background()
		ids := b.deadOutbound(t, "hubspot", 3)
		pending, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", "live"))
		if err != nil {
			t.Fatal(err)
		}
		res, err := DiscardDeadLetters(ctx, b.st, DiscardRequest{Direction: store.DirectionOutbound,
			IDs: []string{ids[0], ids[1], pending.ID, "no-such-id"}, Reason: "  contact deleted in the app  "})
		if err != nil || res.Discarded != 2 {
			t.Fatalf("DiscardDeadLetters = %+v, %v; want 2 discarded (the pending and unknown ids left alone)", res, err)
		}
		left, err := ListDeadLetters(ctx, b.st, DeadLetterQuery{Direction: store.DirectionOutbound})
		if err != nil || len(left) != 1 || left[0].ID != ids[2] {
			t.Fatalf("dead letters after discard = %+v, %v; want only %s", left, err, ids[2])
		}
		if _, err := b.st.Outbound().Get(ctx, pending.ID); err != nil {
			t.Fatalf("the pending event was touched: %v", err)
		}
		got, err := ListDiscarded(ctx, b.st, 0)
		if err != nil || len(got) != 2 {
			t.Fatalf("ListDiscarded = %+v, %v; want 2", got, err)
		}
		for _, g := range got {
			if g.Reason != "contact deleted in the app" || !strings.HasPrefix(g.ErrorMessage, "boom") || g.Direction != store.DirectionOutbound ||
				g.Key != "hubspot" || g.ObjectType != "contacts" || !strings.Contains(string(g.Payload), "@example.com") || g.DiscardedDate.IsZero() {
				t.Errorf("discarded = %+v; want the reason, error, key, type and payload kept", g)
			}
		}
		// Discarding again changes nothing.
		if res, err := DiscardDeadLetters(ctx, b.st, DiscardRequest{Direction: store.DirectionOutbound, IDs: ids[:2], Reason: "again"}); err != nil || res.Discarded != 0 {
			t.Fatalf("second discard = %+v, %v; want 0", res, err)
		}
		// Where each id is, for the operator whose retry or discard matched nothing.
		for id, want := range map[string]string{
			ids[0]: `a discarded outbound dead letter`, pending.ID: "a pending event of the outbound queue",
			ids[2]: "a dead letter of the outbound queue", "no-such-id": "no event has this id (a processed event past its retention is cleaned up, and so is a discarded dead letter past HUBSYNC_DISCARDED_RETENTION",
		} {
			if got, err := LocateEvent(ctx, b.st, id); err != nil || !strings.HasPrefix(got, id+": "+want) {
				t.Errorf("LocateEvent(%s) = %q, %v; want %q", id, got, err, want)
			}
		}
	})
}

func TestDiscardDeadLettersRefusesBadRequests(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ids := b.deadOutbound(t, "hubspot", 1)
	for name, r := range map[string]DiscardRequest{
		"no direction":  {IDs: ids, Reason: "x"},
		"bad direction": {Direction: "sideways", IDs: ids, Reason: "x"},
		"no ids":        {Direction: store.DirectionOutbound, Reason: "x"},
		"no reason":     {Direction: store.DirectionOutbound, IDs: ids, Reason: "  "},
		"long reason":   {Direction: store.DirectionOutbound, IDs: ids, Reason: strings.Repeat("a", DiscardReasonMax+1)},
		"bad utf8":      {Direction: store.DirectionOutbound, IDs: ids, Reason: "\xff"},
		"NUL in reason": {Direction: store.DirectionOutbound, IDs: ids, Reason: "typo\x00"},
		"empty id":      {Direction: store.DirectionOutbound, IDs: []string{""}, Reason: "x"},
		"long id":       {Direction: store.DirectionOutbound, IDs: []string{strings.Repeat("1", 65)}, Reason: "x"},
		"too many ids":  {Direction: store.DirectionOutbound, IDs: make([]string, DiscardIDsMax+1), Reason: "x"},
	} {
		if _, err := DiscardDeadLetters(context.Background(), b.st, r); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: err = %v, want ErrBadRequest", name, err)
		}
	}
	if dls, _ := ListDeadLetters(context.Background(), b.st, DeadLetterQuery{Direction: store.DirectionOutbound}); len(dls) != 1 {
		t.Fatalf("a refused request discarded something: %d dead letters left", len(dls))
	}
}

func TestSearchAndRetryMatching(t *testing.T) {
	t.Parallel()
	b := setupOps(t)
	ctx := context.Background()
	ids := b.deadOutbound(t, "hubspot", 5) // errors "boom hubspot-0" … "boom hubspot-4"
	page, err := SearchDeadLetters(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, ErrorContains: "BOOM HUBSPOT-3"})
	if err != nil || len(page.DeadLetters) != 1 || page.DeadLetters[0].ID != ids[3] || page.Next != "" {
		t.Fatalf("search by error = %+v, %v; want only %s", page, err, ids[3])
	}
	if page, err = SearchDeadLetters(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, ObjectType: "deals"}); err != nil || len(page.DeadLetters) != 0 {
		t.Fatalf("search by another type = %+v, %v; want none", page, err)
	}
	page, err = SearchDeadLetters(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, ObjectType: "contacts", Limit: 2})
	if err != nil || len(page.DeadLetters) != 2 || page.Next != ids[1] {
		t.Fatalf("search page 1 = %+v, %v; want 2 and next %s", page, err, ids[1])
	}
	res, err := RetryMatching(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, ErrorContains: fmt.Sprintf("hubspot-%d", 4)})
	if err != nil || res.Requeued != 1 {
		t.Fatalf("RetryMatching one = %+v, %v", res, err)
	}
	res, err = RetryMatching(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, Key: "hubspot", ObjectType: "contacts"})
	if err != nil || res.Requeued != 4 {
		t.Fatalf("RetryMatching all = %+v, %v; want the 4 left", res, err)
	}
	if _, err := SearchDeadLetters(ctx, b.st, DeadLetterSearch{Direction: store.DirectionOutbound, ErrorContains: strings.Repeat("x", 201)}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("oversized error text: err = %v, want ErrBadRequest", err)
	}
}

func TestRecordEvents(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setupDialect(t, d)
		ctx := context.Background()
		b.deadOutbound(t, "hubspot", 1) // record hubspot-0, failed
		if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", "hubspot-0")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.st.Outbound().Enqueue(ctx, outboundEvent(t, "hubspot", "someone-else")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.st.Inbound().Enqueue(ctx, inboundEvent("hubspot", "901")); err != nil {
			t.Fatal(err)
		}
		if _, err := b.st.Inbound().Enqueue(ctx, inboundEvent("hubspot", "902")); err != nil {
			t.Fatal(err)
		}
		in, out, err := RecordEvents(ctx, b.st, RecordEventsQuery{Key: "hubspot", ObjectType: "contacts", RecordID: "hubspot-0", ExternalID: "901"})
		if err != nil {
			t.Fatal(err)
		}
		if len(in) != 1 || in[0].Status != store.StatusPending || in[0].Direction != store.DirectionInbound {
			t.Errorf("inbound = %+v; want the one pending event of 901", in)
		}
		if len(out) != 2 {
			t.Fatalf("outbound = %+v; want the 2 events of hubspot-0", out)
		}
		statuses := map[store.Status]bool{out[0].Status: true, out[1].Status: true}
		if !statuses[store.StatusFailed] || !statuses[store.StatusPending] {
			t.Errorf("outbound statuses = %v; want one failed and one pending", statuses)
		}
		for _, e := range out {
			if e.Status == store.StatusFailed && !strings.HasPrefix(e.ErrorMessage, "boom") {
				t.Errorf("failed event without its error: %+v", e)
			}
		}
		in, out, err = RecordEvents(ctx, b.st, RecordEventsQuery{Key: "hubspot", ObjectType: "contacts", RecordID: "hubspot-0"})
		if err != nil || len(in) != 0 || len(out) != 2 {
			t.Fatalf("without an external id = %d in, %d out, %v; want 0 and 2", len(in), len(out), err)
		}
		if _, _, err := RecordEvents(ctx, b.st, RecordEventsQuery{ObjectType: "contacts", RecordID: "x"}); !errors.Is(err, ErrBadRequest) {
			t.Fatalf("no key: err = %v, want ErrBadRequest", err)
		}
	})
}

// TestDiscardRunsAgainAfterADeadlock: the discard's transaction, rolled back
// by the database as a deadlock after it kept the first dead letter, runs
// again from the start and counts each discarded event once.
func TestDiscardRunsAgainAfterADeadlock(t *testing.T) {
	for _, d := range []store.Dialect{store.Postgres, store.MySQL} {
		t.Run(dbtest.Name(d), func(t *testing.T) {
			b := setupDialect(t, d)
			ctx := context.Background()
			ids := b.deadOutbound(t, "hubspot", 2)
			fired := dbtest.FailOnce(t, b.st.DB(), d, "hubsync_discarded_event", "INSERT", 2)
			res, err := DiscardDeadLetters(ctx, b.st, DiscardRequest{Direction: store.DirectionOutbound, IDs: ids, Reason: "gone"})
			if err != nil || res.Discarded != 2 {
				t.Fatalf("DiscardDeadLetters after one injected deadlock = %+v, %v; want 2 discarded", res, err)
			}
			if n := fired(); n < 4 {
				t.Errorf("the discard kept events %d times; want the first, the deadlocked second and a retry of both", n)
			}
			if got, err := ListDiscarded(ctx, b.st, 0); err != nil || len(got) != 2 {
				t.Errorf("ListDiscarded = %d, %v; want 2", len(got), err)
			}
		})
	}
}
