package records

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// TestMatchByEmailReadsTheIndex: matching a HubSpot contact to an unlinked
// local record by email reads the email's index (migration 026), not every
// contact, on every database, before and after the table's statistics exist:
// without it each HubSpot creation costs time in proportion to the contacts
// stored (BenchmarkApplyMatchByEmail).
func TestMatchByEmailReadsTheIndex(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b, mine, q := matchFixture(t, d)
		query := q.Get("record_find_unlinked_email")
		args := []any{"contacts", "mine@example.com", "hubspot"}
		switch d {
		case store.MySQL:
			args = []any{"hubspot", "contacts", "mine@example.com", "mine@example.com"}
		}
		check := func(when string) {
			t.Helper()
			plan := dbtest.Explain(t, b.st.DB(), d, query, args...)
			if !strings.Contains(plan, "idx_hubsync_record_email") {
				t.Fatalf("%s, the match by email does not read idx_hubsync_record_email:\n%s", when, plan)
			}
			// Without statistics on hubsync_link, PostgreSQL costs a probe
			// by (Destination, ObjectType) of the external-id index as one
			// by the whole key; the query's probe leaves it no such choice.
			if link := linkKey[d]; !strings.Contains(plan, link) || (d == store.Postgres && strings.Contains(plan, "idx_hubsync_link_external")) {
				t.Fatalf("%s, the match by email does not probe each candidate's link by %s:\n%s", when, link, plan)
			}
			var id string
			if err := b.st.DB().QueryRowContext(context.Background(), query, args...).Scan(&id); err != nil || id != mine.ID {
				t.Fatalf("%s, the match by email found %q, %v; want the unlinked %s", when, id, err, mine.ID)
			}
		}
		check("without statistics")
		analyze := map[store.Dialect][]string{
			store.SQLite:   {"ANALYZE"},
			store.Postgres: {"ANALYZE hubsync_record", "ANALYZE hubsync_link"},
			store.MySQL:    {"ANALYZE TABLE hubsync_record", "ANALYZE TABLE hubsync_link"},
		}[d]
		for _, stmt := range analyze {
			if _, err := b.st.DB().Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		check("with statistics")
	})
}

// TestMatchProbesLinksWithoutStatistics: the other two matches, by the local
// record id ($id, the default mapping's companies and deals) and by any
// other field, check that a candidate is unlinked by a probe of
// hubsync_link's primary key before the tables have statistics. PostgreSQL
// read every link of the object type per candidate otherwise (18 ms a match
// at 100,000 links).
func TestMatchProbesLinksWithoutStatistics(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b, mine, q := matchFixture(t, d)
		for _, c := range []struct {
			query string
			args  []any
		}{
			{"record_find_unlinked_id", []any{"contacts", mine.ID, "hubspot"}},
			{"record_find_unlinked", []any{"contacts", "email", "mine@example.com", "hubspot"}},
		} {
			if c.query == "record_find_unlinked" && d == store.MySQL {
				c.args = []any{"hubspot", "contacts", "email", "mine@example.com"}
			}
			plan := dbtest.Explain(t, b.st.DB(), d, q.Get(c.query), c.args...)
			if link := linkKey[d]; !strings.Contains(plan, link) || (d == store.Postgres && strings.Contains(plan, "idx_hubsync_link_external")) {
				t.Errorf("%s does not probe the candidate's link by %s:\n%s", c.query, link, plan)
			}
			var id string
			if err := b.st.DB().QueryRowContext(context.Background(), q.Get(c.query), c.args...).Scan(&id); err != nil || id != mine.ID {
				t.Errorf("%s found %q, %v; want the unlinked %s", c.query, id, err, mine.ID)
			}
		}
	})
}

// matchFixture stores 2,000 linked contacts without statistics
// (bulkContacts) and one unlinked contact with the email mine@example.com,
// and returns the dialect's queries.
func matchFixture(t *testing.T, d store.Dialect) (*bundle, Record, *dialectsql.Queries) {
	t.Helper()
	b := setup(t, d, Config{})
	bulkContacts(t, b, 2_000, false)
	mine, err := b.svc.Insert(context.Background(), "contacts", map[string]any{"email": "mine@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	q, err := dialectsql.Load(sqlFS, "sql", d)
	if err != nil {
		t.Fatal(err)
	}
	return b, mine, q
}

// linkKey is how each database's plan names a probe of hubsync_link by its
// primary key (Destination, ObjectType, RecordID).
var linkKey = map[store.Dialect]string{
	store.SQLite:   "sqlite_autoindex_hubsync_link_1 (Destination=? AND ObjectType=? AND RecordID=?)",
	store.Postgres: "hubsync_link_pkey",
	store.MySQL:    "eq_ref | PRIMARY,idx_hubsync_link_external | PRIMARY",
}

// TestApplyMatchByLongEmail: the email's index holds its first 191
// characters, yet a record with a far longer "email" is stored, and a match
// compares the whole value: two records that share the first 191 characters
// are told apart.
func TestApplyMatchByLongEmail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, d store.Dialect) {
		b := setup(t, d, Config{})
		ctx := context.Background()
		var long strings.Builder
		for i := range 600 { // 9,600 characters that do not compress
			fmt.Fprintf(&long, "%016x", uint64(i)*0x9e3779b97f4a7c15)
		}
		prefix := strings.Repeat("p", 200)
		emails := []string{prefix + "a@example.com", prefix + "b@example.com", long.String() + "@example.com"}
		ids := map[string]string{}
		for _, email := range emails {
			rec, err := b.svc.Insert(ctx, "contacts", map[string]any{"email": email})
			if err != nil {
				t.Fatalf("insert a contact whose email has %d characters: %v", len(email), err)
			}
			ids[email] = rec.ID
		}
		for i, email := range []string{emails[1], emails[2], emails[0]} {
			ch := change(store.EventCreate, fmt.Sprint(70+i), b.clock.Now().Add(time.Hour), map[string]any{"email": email})
			ch.MatchField, ch.MatchValue = "email", email
			if res := mustApply(t, b, ch); res.RecordID != ids[email] || res.Outcome != apply.Updated {
				t.Fatalf("match by an email of %d characters = %+v; want its record %s updated", len(email), res, ids[email])
			}
		}
	})
}
