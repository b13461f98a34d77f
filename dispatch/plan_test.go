package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/storetest"
)

// TestPublishLockProbeWithStaleStatistics checks that the MySQL publish claim
// (publish_lock) looks up each candidate's earlier events by its record key,
// whatever the statistics say. With the statistics of the empty table, kept
// while a backlog of 18,000 events of 7,000 records is filled (InnoDB
// recomputes them in the background, after 10 % of the rows changed), MariaDB
// probed each candidate's record through idx_outbound_poll on Destination
// alone, reading the whole backlog per candidate, as the outbound claim did
// (store/mysqlstore's TestClaimHeadProbeWithStaleStatistics).
func TestPublishLockProbeWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(time.Hour)
	db := dbtest.Migrated(t, store.MySQL)
	st, err := hubsync.NewStore(db.DB, store.MySQL, store.Config{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	dbtest.FreezeEmptyStatistics(t, db.DB, "_System_IntegrationOutbound")
	if err := storetest.FillOutboundRecords(ctx, st, "hubspot", "h", 18000, 7000, base); err != nil {
		t.Fatal(err)
	}
	dbtest.ReopenTables(t, db.DB, "_System_IntegrationOutbound")
	p, err := newPubStore(st)
	if err != nil {
		t.Fatal(err)
	}
	plan := dbtest.ExplainMySQL(t, db.DB, p.q.Get("publish_lock"), "hubspot", now, now, 100)
	var probes int
	for _, cols := range plan {
		if cols[2] != "x" {
			continue
		}
		probes++
		if !strings.Contains(cols[7], "RecordID") {
			t.Errorf("publish_lock probes a candidate's earlier events through %s by %q, not by its record key: %s", cols[5], cols[7], strings.Join(cols, " | "))
		}
	}
	if probes == 0 {
		t.Errorf("no probe of a candidate's earlier events (table x) in publish_lock's plan")
	}
}
