package sqlq

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/hubsync/hubsync/store"
)

// ExplainClaim returns the database's plan for the statement that selects a
// claim's candidates of queue dir (Claim, or ClaimLockPending where claims lock
// first), one line per plan row with the columns joined by " | ". Backends' tests
// use it to check that claims use their indexes. It changes nothing.
func (s *Store) ExplainClaim(ctx context.Context, dir store.Direction, p store.ClaimParams) ([]string, error) {
	qs := s.queueQueries(dir)
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
	// EXPLAIN of a locking read or an UPDATE still takes locks on PostgreSQL and
	// MySQL: run it in a transaction that is rolled back.
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	if _, ok := qs["ClaimPlan"]; ok && name == "Claim" {
		if _, err := tx.ExecContext(ctx, qs["ClaimPlan"].text); err != nil {
			return nil, fmt.Errorf("explain: claim plan settings: %w", err)
		}
	}
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

// ExplainClaimAnalyze runs the claim statement of queue dir (Claim) under
// EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) in a transaction that is rolled
// back, and returns the plan document. Only for dialects whose claim is one
// statement (ClaimReturning) and whose EXPLAIN speaks JSON (PostgreSQL). The
// claim really runs, so it also shows what the claim reads, not only what the
// planner expected; the rollback undoes its leases.
func (s *Store) ExplainClaimAnalyze(ctx context.Context, dir store.Direction, p store.ClaimParams) ([]byte, error) {
	if s.d.Name != store.Postgres {
		return nil, fmt.Errorf("explain analyze: not supported on %s", s.d.Name)
	}
	qs := s.queueQueries(dir)
	p = p.WithDefaults()
	now := s.now()
	args, err := qs["Claim"].args(params{"key": p.Key, "limit": p.Limit, "window": claimWindow(p.Limit), "max_per_record": p.MaxPerRecord, "owner": p.Owner, "now": s.encodeTime(now),
		"lease_expires": s.encodeTime(now.Add(p.LeaseDuration))})
	if err != nil {
		return nil, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback() //nolint:errcheck // the claim must not stay
	if plan, ok := qs["ClaimPlan"]; ok {
		if _, err := tx.ExecContext(ctx, plan.text); err != nil {
			return nil, fmt.Errorf("explain analyze: claim plan settings: %w", err)
		}
	}
	var doc []byte
	if err := tx.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+qs["Claim"].text, args...).Scan(&doc); err != nil {
		return nil, fmt.Errorf("explain analyze claim: %w", err)
	}
	return doc, nil
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
