package records

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/store"
)

// TestCurrentFieldsReadsEachRecordOnce: the outbound worker's read of the
// fields of a cycle's records returns those that exist (not another type's
// record of the same id), and probes the primary key once per id on every
// database, before and after statistics exist, rather than reading every
// record of the type.
func TestCurrentFieldsReadsEachRecordOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b, mine, q := matchFixture(t, d)
		ctx := context.Background()
		if _, err := b.svc.Insert(ctx, "companies", map[string]any{"name": "Other type"}); err != nil {
			t.Fatal(err)
		}
		ids := []string{mine.ID, "absent-1", mine.ID + "x", "0", "zzz"}
		got, err := b.svc.CurrentFields(ctx, "contacts", ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[mine.ID]["email"] != "mine@example.com" {
			t.Fatalf("CurrentFields = %v; want only %s's", got, mine.ID)
		}
		list, _ := json.Marshal(ids)
		want := map[store.Dialect]string{
			store.SQLite:   "hubsync_record USING INDEX sqlite_autoindex_hubsync_record_1 (ObjectType=? AND Id=?)",
			store.Postgres: "hubsync_record_pkey",
			store.MySQL:    "eq_ref | PRIMARY",
		}[d]
		check := func(when string) {
			t.Helper()
			plan := dbtest.Explain(t, b.st.DB(), d, q.Get("record_fields_many"), "contacts", string(list))
			if !strings.Contains(plan, want) || (d == store.Postgres && strings.Contains(plan, "Seq Scan on hubsync_record")) {
				t.Fatalf("%s, the read does not probe %s per id:\n%s", when, want, plan)
			}
		}
		check("without statistics")
		for _, stmt := range map[store.Dialect][]string{
			store.SQLite: {"ANALYZE"}, store.Postgres: {"ANALYZE hubsync_record"}, store.MySQL: {"ANALYZE TABLE hubsync_record"},
		}[d] {
			if _, err := b.st.DB().Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		check("with statistics")
	})
}

// BenchmarkCurrentFields reads the fields of 100 of 100,000 stored
// contacts, as the outbound worker does once per cycle of updates
// (outbound.Config.LocalRecords): its cost is what an update cycle adds.
//
//	go test ./records -run '^$' -bench CurrentFields
func BenchmarkCurrentFields(b *testing.B) {
	for _, d := range dbtest.Dialects {
		b.Run(dbtest.Name(d), func(b *testing.B) {
			bu := setup(b, d, Config{})
			bulkContacts(b, bu, 100_000, true)
			ids := make([]string, 100)
			for i := range ids {
				ids[i] = fmt.Sprintf("bulk-%d", 1+i*997)
			}
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				got, err := bu.svc.CurrentFields(ctx, "contacts", ids)
				if err != nil || len(got) != len(ids) {
					b.Fatalf("CurrentFields = %d records, %v; want %d", len(got), err, len(ids))
				}
			}
		})
	}
}
