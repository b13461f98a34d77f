package ops

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// TestRecordInboundPlanWithStaleStatistics checks that the MySQL
// record_inbound reads one record's inbound events by its key, whatever the
// statistics say. With the statistics of the empty table, kept while 20,000
// events of 7,000 records were filled, MariaDB read the events of the whole
// object type newest first through idx_inbound_source (Source, ObjectType,
// CreatedDate) until it had found the record's.
func TestRecordInboundPlanWithStaleStatistics(t *testing.T) {
	ctx := context.Background()
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	db := dbtest.Migrated(t, store.MySQL)
	st, err := hubsync.NewStore(db.DB, store.MySQL, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const table = "_System_IntegrationInbound"
	dbtest.FreezeEmptyStatistics(t, db.DB, table)
	if _, err := db.DB.ExecContext(ctx, `INSERT INTO _System_IntegrationInbound (Id, Source, ExternalID, ObjectType, EventType, Payload,
    IdempotencyKey, Status, CreatedDate, LastModifiedDate, NextAttemptDate, ProcessedDate, Seq, Lane)
SELECT CONCAT('i', LPAD(s.seq, 10, '0')), 'hubspot', CONCAT('x', (s.seq - 1) % 7000 + 1), 'contacts', 'update', '{}',
    CONCAT('k', s.seq), 'processed', TIMESTAMPADD(MICROSECOND, s.seq, ?), ?, ?, ?, (s.seq - 1) DIV 7000 + 1, (s.seq - 1) DIV 7000 + 1
FROM seq_1_to_20000 AS s`, base, base, base, base); err != nil {
		t.Fatal(err)
	}
	dbtest.ReopenTables(t, db.DB, table)
	q, err := dialectsql.Load(sqlFS, "sql", store.MySQL)
	if err != nil {
		t.Fatal(err)
	}
	plan := dbtest.ExplainMySQL(t, db.DB, q.Get("record_inbound"), "hubspot", "x12", "contacts", 20)
	if len(plan) != 1 {
		t.Fatalf("record_inbound's plan has %d rows, want 1", len(plan))
	}
	if cols := plan[0]; cols[5] != "idx_inbound_external" || cols[3] != "ref" {
		t.Errorf("record_inbound reads the inbound events through %s (%s), not by the record's key (ref on idx_inbound_external)", cols[5], cols[3])
	}
	in, _, err := RecordEvents(ctx, st, RecordEventsQuery{Key: "hubspot", ObjectType: "contacts", ExternalID: "x12"})
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 3 {
		t.Errorf("%d inbound events of x12, want 3", len(in))
	}
	for i := 1; i < len(in); i++ {
		if !in[i].CreatedDate.Before(in[i-1].CreatedDate) {
			t.Errorf("inbound events of x12 are not newest first: %v", in)
		}
	}
}
