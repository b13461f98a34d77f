package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
	"github.com/hubsync/hubsync/subscriptions"
)

// twoDaysOld returns the URL of a migrated SQLite database holding, written
// two days ago, a superseded subscription request (and its contact's newer,
// synced one) and a discarded dead letter: what a retention under two days
// deletes and the defaults keep.
func twoDaysOld(t *testing.T) string {
	t.Helper()
	db := dbtest.Migrated(t, store.SQLite)
	st, err := sqlitestore.New(db.DB, store.Config{Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	subs := subscriptions.NewStore(st)
	var newest subscriptions.Stored
	for _, key := range []string{"k1", "k2"} {
		r, err := subs.Submit(ctx, subscriptions.Request{BrandID: "acme", ProductID: "news", ContactKey: "ada@example.com", DesiredState: "subscribed"}, key, 1)
		if err != nil {
			t.Fatal(err)
		}
		newest = r.Stored
	}
	if _, err := subs.Settle(ctx, newest, subscriptions.StatusSynced, ""); err != nil {
		t.Fatal(err)
	}
	p, _ := outbox.Snapshot{ID: "1", Fields: map[string]any{}}.Marshal()
	if _, err := st.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "crm", ObjectType: "contacts", RecordID: "1", EventType: store.EventCreate, Payload: p}); err != nil {
		t.Fatal(err)
	}
	evs, err := st.Outbound().Claim(ctx, store.ClaimParams{Key: "crm"})
	if err != nil || len(evs) != 1 {
		t.Fatalf("claim: %d, %v", len(evs), err)
	}
	if err := st.Outbound().Fail(ctx, evs[0].Lease(), "VALIDATION_ERROR: bad email"); err != nil {
		t.Fatal(err)
	}
	if res, err := ops.DiscardDeadLetters(ctx, st, ops.DiscardRequest{Direction: store.DirectionOutbound, IDs: []string{evs[0].ID}, Reason: "test contact"}); err != nil || res.Discarded != 1 {
		t.Fatalf("discard = %+v, %v", res, err)
	}
	return db.URL
}

// TestCleanupRetentionSettings: cleanup reads -subscription-retention and
// -discarded-retention, and their environment variables, a flag winning.
func TestCleanupRetentionSettings(t *testing.T) {
	t.Parallel()
	url := twoDaysOld(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"defaults", nil, nil, "settled subscription requests 0; discarded dead letters 0"},
		{"flags win", []string{"HUBSYNC_SUBSCRIPTION_RETENTION=1d", "HUBSYNC_DISCARDED_RETENTION=1d"},
			[]string{"-subscription-retention", "3d", "-discarded-retention=72h"}, "settled subscription requests 0; discarded dead letters 0"},
		{"environment", []string{"HUBSYNC_SUBSCRIPTION_RETENTION=1d"}, nil, "settled subscription requests 1; discarded dead letters 0"},
		{"flag", nil, []string{"-discarded-retention", "36h"}, "settled subscription requests 0; discarded dead letters 1"},
	} {
		code, out, errOut := runCmd(t, baseEnv(append([]string{"HUBSYNC_DATABASE_URL=" + url}, tc.env...)...), append([]string{"cleanup"}, tc.args...)...)
		if code != 0 || !strings.HasPrefix(out, "deleted processed events: inbound 0, outbound 0, internal 0; ") || !strings.Contains(out, tc.want) {
			t.Fatalf("%s: cleanup = %d\n%s%s; want %q", tc.name, code, out, errOut, tc.want)
		}
	}
}

// TestCleanupRetentionErrors: a negative or unreadable retention is refused,
// naming the flag or the environment variable.
func TestCleanupRetentionErrors(t *testing.T) {
	t.Parallel()
	url := "sqlite:" + t.TempDir() + "/x.db"
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"negative subscription flag", nil, []string{"-subscription-retention", "-1h"}, []string{"-subscription-retention", `"-1h" is negative`}},
		{"garbage discarded flag", nil, []string{"-discarded-retention", "soon"}, []string{"-discarded-retention", `"soon" is not a duration`}},
		{"negative subscription variable", []string{"HUBSYNC_SUBSCRIPTION_RETENTION=-2d"}, nil, []string{"HUBSYNC_SUBSCRIPTION_RETENTION", `"-2d" is negative`}},
		{"garbage discarded variable", []string{"HUBSYNC_DISCARDED_RETENTION=forever"}, nil, []string{"HUBSYNC_DISCARDED_RETENTION", `"forever" is not a duration`}},
	} {
		code, _, errOut := runCmd(t, baseEnv(append([]string{"HUBSYNC_DATABASE_URL=" + url}, tc.env...)...), append([]string{"cleanup"}, tc.args...)...)
		if code == 0 {
			t.Errorf("%s: cleanup succeeded", tc.name)
		}
		wantNamed(t, tc.name, errOut, tc.want)
	}
}

// TestServeCleansSubscriptionsAndDiscarded: serve's cleaner takes the
// retentions of its flags and logs what it deleted.
func TestServeCleansSubscriptionsAndDiscarded(t *testing.T) {
	t.Parallel()
	env := baseEnv("HUBSYNC_DATABASE_URL="+twoDaysOld(t), "HUBSPOT_CLIENT_SECRET=s", "HUBSYNC_SUBSCRIPTION_RETENTION=1d")
	svc := startServe(t, env, "-sync-worker=false", "-outbound-worker=false", "-discarded-retention", "1d")
	testwait.For(t, "the cleaner's line", func() bool { return strings.Contains(svc.logs(), "cleanup: deleted processed events") })
	if logs := svc.logs(); !strings.Contains(logs, "subscription_requests=1 discarded=1") {
		t.Errorf("serve's cleaner does not log subscription_requests=1 discarded=1:\n%s", logs)
	}
	if code := svc.stop(t); code != 0 {
		t.Fatalf("exit %d\n%s", code, svc.logs())
	}
}
