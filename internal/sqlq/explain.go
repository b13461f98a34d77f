package sqlq

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/hubsync/hubsync/store"
)

// ExplainClaim returns the database's plan for the statement that selects a
// claim's candidates of queue dir (Claim, or ClaimLockPending where claims lock
// first), one line per plan row with the columns joined by " | ". Backends' tests
// use it to check that claims use their indexes. It changes nothing.
//
// A dialect whose claim is a call of a server-side function (ClaimCall) has no
// statement to explain here: EXPLAIN of the call shows only the function scan,
// and the function's statement runs under the function's own settings. Its
// tests read the plan the function ran (PostgreSQL: auto_explain with
// log_nested_statements).
func (s *Store) ExplainClaim(ctx context.Context, dir store.Direction, p store.ClaimParams) ([]string, error) {
	qs := s.queueQueries(dir)
	if _, ok := qs["ClaimCall"]; ok {
		return nil, fmt.Errorf("explain claim: the %s claim is a server-side function; read its plan with auto_explain", s.d.Name)
	}
	name := "Claim"
	if s.d.Mode == ClaimLockThenUpdate {
		name = "ClaimLockPending"
	}
	p = p.WithDefaults()
	now := s.now()
	args, err := qs[name].args(params{"key": p.Key, "limit": p.Limit, "window": claimWindow(p.Limit), "max_per_record": p.MaxPerRecord, "owner": p.Owner, "now": s.encodeTime(now),
		"lease_expires": s.encodeTime(now.Add(p.LeaseDuration))})
	if err != nil {
		return nil, err
	}
	prefix := "EXPLAIN "
	if s.d.Name == store.SQLite {
		prefix = "EXPLAIN QUERY PLAN "
	}
	// EXPLAIN of a locking read or an UPDATE still takes locks on MySQL: run it
	// in a transaction that is rolled back.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	rows, err := tx.QueryContext(ctx, prefix+qs[name].text, args...)
	if err != nil {
		return nil, fmt.Errorf("explain %s: %w", name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = v.String
		}
		out = append(out, strings.Join(parts, " | "))
	}
	return out, rows.Err()
}

func (s *Store) queueQueries(dir store.Direction) map[string]query {
	switch dir {
	case store.DirectionInbound:
		return s.inbound.q
	case store.DirectionOutbound:
		return s.outbound.q
	default:
		return s.internal.q
	}
}

// Query returns the text of query name of queue dir as the engine sends it
// (rendered for the queue, its @names bound to the dialect's placeholders)
// and its parameters' names in bind order; ok is false when the queue has no
// such query. Backends' tests use it to compare what the engine runs with
// what their migrations hold.
func (s *Store) Query(dir store.Direction, name string) (text string, names []string, ok bool) {
	q, ok := s.queueQueries(dir)[name]
	return q.text, slices.Clone(q.names), ok
}
