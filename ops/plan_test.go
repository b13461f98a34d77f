package ops

import (
	"context"
	"fmt"
	"strings"
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

// TestDiscardedCleanupPlans: a batch of the discarded dead letters' cleanup
// finds them by hubsync_discarded_event_date and, where it deletes by id, by
// primary key, whatever the table holds. MySQL/MariaDB plans with the
// statistics of the empty table (as after a fast fill), the others with
// fresh ones.
func TestDiscardedCleanupPlans(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		db := dbtest.Migrated(t, d)
		const table = "hubsync_discarded_event"
		if d == store.MySQL {
			dbtest.FreezeEmptyStatistics(t, db.DB, table)
		}
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		tx, err := db.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		ins := dialectsql.Rebind(d, `INSERT INTO hubsync_discarded_event (Id, Direction, EventKey, ObjectType, RecordID, EventType, Attempts,
    ErrorMessage, Payload, Reason, CreatedDate, DiscardedDate) VALUES (?, 'outbound', 'hubspot', 'contacts', ?, 'create', 1, 'boom', '{}', 'gone', ?, ?)`)
		for i := range 3000 {
			if _, err := tx.Exec(ins, fmt.Sprintf("e%05d", i), fmt.Sprint("r", i), dialectsql.Time(d, base), dialectsql.Time(d, base.Add(time.Duration(i)*time.Minute))); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		dbtest.RefreshStatistics(t, db.DB, d, table)
		q, err := dialectsql.Load(sqlFS, "sql", d)
		if err != nil {
			t.Fatal(err)
		}
		plan := dbtest.Explain(t, db.DB, d, q.Get("discarded_cleanup"), dialectsql.Time(d, base.Add(100*time.Minute)), 50)
		want := map[store.Dialect][]string{
			store.SQLite:   {"INDEX sqlite_autoindex_hubsync_discarded_event_1 (Id=?)", "INDEX hubsync_discarded_event_date (DiscardedDate<?)"},
			store.Postgres: {"Index Scan using hubsync_discarded_event_pkey", "using hubsync_discarded_event_date"},
			store.MySQL:    {"| range |", "| hubsync_discarded_event_date |"},
		}[d]
		for _, w := range want {
			if !strings.Contains(plan, w) {
				t.Errorf("discarded_cleanup's plan does not say %q:\n%s", w, plan)
			}
		}
		for _, bad := range []string{"Seq Scan", "SCAN hubsync_discarded_event", "| ALL |"} {
			if strings.Contains(plan, bad) {
				t.Errorf("discarded_cleanup's plan reads the whole table (%q):\n%s", bad, plan)
			}
		}
	})
}
