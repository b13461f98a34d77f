package sqlq

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

// Queue is the engine's implementation of one queue's claim, lease, cleanup and
// dead-letter operations; the repositories embed it.
type Queue[E any] struct {
	s   *Store
	def queueDef[E]
	q   map[string]query
}

func newQueue[E any](s *Store, def queueDef[E]) (*Queue[E], error) {
	q, err := loadQueries(s.d, def.data)
	if err != nil {
		return nil, err
	}
	need := []string{"Insert", "Get", "Pending", "Complete", "Fail", "RetryCount", "Retry", "Release",
		"Cleanup", "DeadLetters", "Requeue", "Stats", "NextSeq", "NextSeqBatch", "FailedByID", "FailedByKey",
		"ExtendLease", "LeaseLost"}
	if def.data.Dir == store.DirectionInbound {
		need = append(need, "IDByIdempotencyKey")
	}
	switch s.d.Mode {
	case ClaimReturning:
		need = append(need, "Claim", "ClaimIDs")
	case ClaimLockThenUpdate:
		need = append(need, "ClaimLockPending", "ClaimLockExpired", "ClaimLockIDs", "ClaimLockFollowers", "ClaimUpdate", "SelectIDs", "LockLeases")
	}
	for _, n := range need {
		if _, ok := q[n]; !ok {
			return nil, fmt.Errorf("sqlq: %s queries lack %s for %s", s.d.Name, n, def.data.Table)
		}
	}
	return &Queue[E]{s: s, def: def, q: q}, nil
}

func (qu *Queue[E]) op(what string, err error) error {
	return fmt.Errorf("%s %s: %w", what, qu.def.data.Dir, err)
}

// querier is what the read helpers run on: *sql.DB or *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (qu *Queue[E]) exec(ctx context.Context, on querier, name string, p params) (int64, error) {
	q := qu.q[name]
	args, err := q.args(p)
	if err != nil {
		return 0, err
	}
	res, err := on.ExecContext(ctx, q.text, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (qu *Queue[E]) rows(ctx context.Context, on querier, name string, p params) (*sql.Rows, error) {
	q := qu.q[name]
	args, err := q.args(p)
	if err != nil {
		return nil, err
	}
	return on.QueryContext(ctx, q.text, args...)
}

// events runs a query that selects the queue's columns.
func (qu *Queue[E]) events(ctx context.Context, on querier, name string, p params) ([]E, error) {
	rows, err := qu.rows(ctx, on, name, p)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []E
	for rows.Next() {
		var e E
		if err := rows.Scan(qu.def.targets(&e)...); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// strs runs a query that selects one text column.
func (qu *Queue[E]) strs(ctx context.Context, on querier, name string, p params) ([]string, error) {
	rows, err := qu.rows(ctx, on, name, p)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// sortEvents puts events in claim order: records by their first event's
// (CreatedDate, Id), and each record's events in Lane order, in the places
// its events hold. CreatedDate only interleaves different records; within a
// record the database-assigned Lane alone decides.
func (qu *Queue[E]) sortEvents(evs []E) {
	slices.SortFunc(evs, func(a, b E) int {
		ia, sa := qu.def.state(&a)
		ib, sb := qu.def.state(&b)
		return cmp.Or(sa.CreatedDate.Compare(sb.CreatedDate), strings.Compare(ia, ib))
	})
	byRecord := map[[3]string][]int{} // positions of each record's events
	for i := range evs {
		k := qu.def.record(&evs[i])
		byRecord[k] = append(byRecord[k], i)
	}
	for _, pos := range byRecord {
		if len(pos) < 2 {
			continue
		}
		group := make([]E, len(pos))
		for j, i := range pos {
			group[j] = evs[i]
		}
		slices.SortFunc(group, func(a, b E) int {
			ia, sa := qu.def.state(&a)
			ib, sb := qu.def.state(&b)
			return cmp.Or(cmp.Compare(sa.Lane, sb.Lane), strings.Compare(ia, ib))
		})
		for j, i := range pos {
			evs[i] = group[j]
		}
	}
}

// Get reads one event; store.ErrNotFound when absent.
func (qu *Queue[E]) Get(ctx context.Context, id string) (E, error) {
	var zero E
	evs, err := qu.events(ctx, qu.s.db, "Get", params{"id": id})
	if err != nil {
		return zero, qu.op("get", err)
	}
	if len(evs) == 0 {
		return zero, fmt.Errorf("get %s %s: %w", qu.def.data.Dir, id, store.ErrNotFound)
	}
	return evs[0], nil
}

// GetPending lists claimable events of one key, oldest first, without claiming.
func (qu *Queue[E]) GetPending(ctx context.Context, key string, limit int) ([]E, error) {
	limit = cmp.Or(limit, store.ClaimLimitDefault)
	evs, err := qu.events(ctx, qu.s.db, "Pending", params{"key": key, "now": qu.s.encodeTime(qu.s.now()), "limit": limit,
		"window": claimWindow(limit)})
	if err != nil {
		return nil, qu.op("get pending", err)
	}
	qu.sortEvents(evs)
	return evs, nil
}

// claimWindowFactor sizes a claim's window: how many due pending events, in
// claim order, a claim walks looking for heads before it turns to a walk over
// records (see the backends' queries). Ten times the limit leaves room for the
// heads that concurrent claimers have locked. PostgreSQL's claim reads record
// lanes instead (migration 018) and has no window.
const claimWindowFactor = 10

// claimWindow is the window of a claim with this limit.
func claimWindow(limit int) int { return max(limit, 1) * claimWindowFactor }

// Claim leases up to p.Limit claimable events of key p.Key.
func (qu *Queue[E]) Claim(ctx context.Context, p store.ClaimParams) ([]E, error) {
	return qu.claim(ctx, p, nil)
}

// ClaimIDs leases the named events that are their records' heads, each with
// up to p.MaxPerRecord-1 of its record's due followers, as Claim does.
func (qu *Queue[E]) ClaimIDs(ctx context.Context, ids []string, p store.ClaimParams) ([]E, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return qu.claim(ctx, p, ids)
}

func (qu *Queue[E]) claim(ctx context.Context, p store.ClaimParams, ids []string) ([]E, error) {
	p = p.WithDefaults()
	if p.Limit < 0 || p.LeaseDuration < 0 || p.MaxPerRecord < 0 {
		return nil, fmt.Errorf("claim %s: Limit, LeaseDuration and MaxPerRecord must not be negative", qu.def.data.Dir)
	}
	now := qu.s.now()
	args := params{
		"key": p.Key, "limit": p.Limit, "window": claimWindow(p.Limit), "owner": p.Owner, "ids": idsJSON(ids), "max_per_record": p.MaxPerRecord,
		"now": qu.s.encodeTime(now), "lease_expires": qu.s.encodeTime(now.Add(p.LeaseDuration)),
	}
	if ids != nil {
		args["limit"] = len(ids)
	}
	var evs []E
	var err error
	switch qu.s.d.Mode {
	case ClaimReturning:
		name := "Claim"
		if ids != nil {
			name = "ClaimIDs"
		}
		if _, ok := qu.q["ClaimCall"]; ok && ids == nil {
			// The dialect keeps the claim in a server-side function that
			// carries its own planner settings: one call in autocommit,
			// retried on a deadlock as the engine's transactions are.
			err = qu.s.retry(ctx, func() error {
				var err error
				evs, err = qu.events(ctx, qu.s.db, "ClaimCall", args)
				return err
			})
			break
		}
		err = qu.s.write(ctx, func() error {
			var err error
			evs, err = qu.events(ctx, qu.s.db, name, args)
			return err
		})
	case ClaimLockThenUpdate:
		err = qu.s.inTx(ctx, qu.s.d.ClaimTx, func(tx *sql.Tx) error {
			evs, err = qu.claimLocked(ctx, tx, args, ids != nil, p.Limit, p.MaxPerRecord)
			return err
		})
	}
	if err != nil {
		return nil, qu.op("claim", err)
	}
	qu.sortEvents(evs)
	return evs, nil
}

// claimLocked is ClaimLockThenUpdate: it runs inside the claim transaction.
// It locks the heads (skipping rows another claimer holds), then the heads'
// followers, and leases them all with one UPDATE.
func (qu *Queue[E]) claimLocked(ctx context.Context, tx *sql.Tx, args params, byID bool, limit, perRecord int) ([]E, error) {
	// A deadlock runs the transaction again with the caller's args: the ids
	// asked for, not the heads this run put in "ids".
	args = maps.Clone(args)
	var cands []candidate
	var err error
	if byID {
		cands, err = qu.candidates(ctx, tx, "ClaimLockIDs", args)
	} else {
		var expired []candidate
		if cands, err = qu.candidates(ctx, tx, "ClaimLockPending", args); err == nil {
			expired, err = qu.candidates(ctx, tx, "ClaimLockExpired", args)
			cands = append(cands, expired...)
		}
	}
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	if cands, err = qu.recheck(ctx, tx, args, cands); err != nil || len(cands) == 0 {
		return nil, err
	}
	slices.SortFunc(cands, func(a, b candidate) int {
		return cmp.Or(a.created.Compare(b.created), strings.Compare(a.id, b.id))
	})
	if !byID && len(cands) > limit {
		cands = cands[:limit]
	}
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	if perRecord > 1 {
		args["ids"] = idsJSON(ids)
		fol, err := qu.followers(ctx, tx, args, perRecord)
		if err != nil {
			return nil, err
		}
		ids = append(ids, fol...)
	}
	slices.Sort(ids)
	args["ids"] = idsJSON(slices.Compact(ids))
	if _, err := qu.exec(ctx, tx, "ClaimUpdate", args); err != nil {
		return nil, err
	}
	return qu.events(ctx, tx, "SelectIDs", args)
}

// recheck keeps the locked candidates that are still their records' heads
// by a read in a statement of its own (ClaimRecheck.sql says why).
func (qu *Queue[E]) recheck(ctx context.Context, tx *sql.Tx, args params, cands []candidate) ([]candidate, error) {
	ids := make([]string, len(cands))
	for i, c := range cands {
		ids[i] = c.id
	}
	args["ids"] = idsJSON(ids)
	return qu.candidates(ctx, tx, "ClaimRecheck", args)
}

// followers locks and reads the followers of the heads in args["ids"] and
// returns, per head, the ones before the first that is not due, at most
// perRecord-1 of them.
func (qu *Queue[E]) followers(ctx context.Context, tx *sql.Tx, args params, perRecord int) ([]string, error) {
	rows, err := qu.rows(ctx, tx, "ClaimLockFollowers", args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	var head string
	var taken int
	var stopped bool
	for rows.Next() {
		var id, h string
		var lane int64
		var due int
		if err := rows.Scan(&id, &lane, &h, &due); err != nil {
			return nil, err
		}
		if h != head { // rows come grouped by head, each group in claim order
			head, taken, stopped = h, 1, false
		}
		if stopped || due == 0 || taken >= perRecord {
			stopped = true
			continue
		}
		out = append(out, id)
		taken++
	}
	return out, rows.Err()
}

type candidate struct {
	id      string
	created time.Time
}

func (qu *Queue[E]) candidates(ctx context.Context, tx *sql.Tx, name string, args params) ([]candidate, error) {
	rows, err := qu.rows(ctx, tx, name, args)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		if err := rows.Scan(&c.id, timeCol{dst: &c.created}); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// applyLeases runs a batch lease change (Complete, Release) and reports the
// leases it could not apply.
// With a non-nil tx it runs inside the caller's transaction instead of its own.
func (qu *Queue[E]) applyLeases(ctx context.Context, tx store.DBTX, name string, args params, leases []store.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	args["leases"] = leasesJSON(leases)
	lockThenUpdate := func(tx querier) ([]string, error) {
		live, err := qu.strs(ctx, tx, "LockLeases", args)
		if err != nil || len(live) == 0 {
			return nil, err
		}
		args["ids"] = idsJSON(live)
		if _, err := qu.exec(ctx, tx, name, args); err != nil {
			return nil, err
		}
		return live, nil
	}
	var applied []string
	var err error
	switch {
	case tx != nil && qu.s.d.Mode == ClaimReturning:
		// No write lock: the caller's transaction may already hold the
		// database's, and its commit is what makes the change visible.
		applied, err = qu.strs(ctx, tx, name, args)
	case tx != nil:
		applied, err = lockThenUpdate(tx)
	case qu.s.d.Mode == ClaimReturning:
		err = qu.s.write(ctx, func() error {
			var err error
			applied, err = qu.strs(ctx, qu.s.db, name, args)
			return err
		})
	default:
		err = qu.s.inTx(ctx, nil, func(tx *sql.Tx) error {
			var err error
			applied, err = lockThenUpdate(tx)
			return err
		})
	}
	if err != nil {
		return err
	}
	if len(applied) == len(leases) {
		return nil
	}
	lost := &store.LeaseLostError{}
	for _, l := range leases {
		if !slices.Contains(applied, l.ID) {
			lost.Leases = append(lost.Leases, l)
		}
	}
	if len(lost.Leases) == 0 {
		return nil
	}
	return lost
}

// Complete marks the leased events processed.
func (qu *Queue[E]) Complete(ctx context.Context, leases ...store.Lease) error {
	now := qu.s.encodeTime(qu.s.now())
	if err := qu.applyLeases(ctx, nil, "Complete", params{"now": now}, leases); err != nil {
		return qu.op("complete", err)
	}
	return nil
}

// CompleteTx marks the leased events processed inside the caller's
// transaction. The UPDATE locks the rows it changes, so a claim by another
// worker waits for (or skips) them until tx ends; the caller rolls back on an
// error, a lost lease included.
func (qu *Queue[E]) CompleteTx(ctx context.Context, tx store.DBTX, leases ...store.Lease) error {
	if tx == nil {
		return qu.op("complete", errors.New("CompleteTx needs a transaction"))
	}
	now := qu.s.encodeTime(qu.s.now())
	if err := qu.applyLeases(ctx, tx, "Complete", params{"now": now}, leases); err != nil {
		return qu.op("complete", err)
	}
	return nil
}

// Release returns the leased events to pending, claimable after delay.
func (qu *Queue[E]) Release(ctx context.Context, delay time.Duration, leases ...store.Lease) error {
	now := qu.s.now()
	args := params{"now": qu.s.encodeTime(now), "next": qu.s.encodeTime(now.Add(max(delay, 0)))}
	if err := qu.applyLeases(ctx, nil, "Release", args, leases); err != nil {
		return qu.op("release", err)
	}
	return nil
}

// ExtendLease moves the lease expiry of the events still processing under
// leases to at least now + d, and reports the leases whose event was claimed
// again.
func (qu *Queue[E]) ExtendLease(ctx context.Context, d time.Duration, leases ...store.Lease) error {
	if len(leases) == 0 {
		return nil
	}
	now := qu.s.now()
	args := params{"now": qu.s.encodeTime(now), "until": qu.s.encodeTime(now.Add(max(d, 0))), "leases": leasesJSON(leases)}
	err := qu.s.write(ctx, func() error {
		_, err := qu.exec(ctx, qu.s.db, "ExtendLease", args)
		return err
	})
	if err != nil {
		return qu.op("extend lease", err)
	}
	// After the UPDATE: an event it extended cannot be claimed again before
	// the new expiry, so any claim this reads happened before the heartbeat.
	lostIDs, err := qu.strs(ctx, qu.s.db, "LeaseLost", args)
	if err != nil {
		return qu.op("extend lease", err)
	}
	if len(lostIDs) == 0 {
		return nil
	}
	lost := &store.LeaseLostError{}
	for _, l := range leases {
		if slices.Contains(lostIDs, l.ID) {
			lost.Leases = append(lost.Leases, l)
		}
	}
	return qu.op("extend lease", lost)
}

func leaseLost(l store.Lease) error { return &store.LeaseLostError{Leases: []store.Lease{l}} }

// Fail marks the leased event failed (dead letter).
func (qu *Queue[E]) Fail(ctx context.Context, lease store.Lease, errMsg string) error {
	var n int64
	err := qu.s.write(ctx, func() error {
		var err error
		n, err = qu.exec(ctx, qu.s.db, "Fail", params{
			"id": lease.ID, "attempt": lease.Attempt, "error": errMsg, "now": qu.s.encodeTime(qu.s.now()),
		})
		return err
	})
	if err != nil {
		return qu.op("fail", err)
	}
	if n == 0 {
		return qu.op("fail", leaseLost(lease))
	}
	return nil
}

// IncrementRetry records a failed attempt and schedules the next one, or
// dead-letters the event at the retry policy's MaxAttempts.
func (qu *Queue[E]) IncrementRetry(ctx context.Context, lease store.Lease, errMsg string, minDelay time.Duration) (store.RetryResult, error) {
	args := params{"id": lease.ID, "attempt": lease.Attempt}
	var retries int
	err := qu.s.db.QueryRowContext(ctx, qu.q["RetryCount"].text, mustArgs(qu.q["RetryCount"], args)...).Scan(&retries)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RetryResult{}, qu.op("increment retry", leaseLost(lease))
	}
	if err != nil {
		return store.RetryResult{}, qu.op("increment retry", err)
	}
	now := qu.s.now()
	res := store.RetryResult{Dead: retries+1 >= qu.s.cfg.Retry.MaxAttempts}
	status, next := store.StatusFailed, now
	if !res.Dead {
		status = store.StatusPending
		next = now.Add(max(qu.s.cfg.Retry.Delay(retries+1), minDelay))
		res.NextAttemptDate = next
	}
	args["retry_count"] = retries
	args["status"] = string(status)
	args["error"] = errMsg
	args["next"] = qu.s.encodeTime(next)
	args["now"] = qu.s.encodeTime(now)
	var n int64
	err = qu.s.write(ctx, func() error {
		var err error
		n, err = qu.exec(ctx, qu.s.db, "Retry", args)
		return err
	})
	if err != nil {
		return store.RetryResult{}, qu.op("increment retry", err)
	}
	if n == 0 {
		return store.RetryResult{}, qu.op("increment retry", leaseLost(lease))
	}
	return res, nil
}

// mustArgs orders args for a query whose parameters the caller supplies in full.
func mustArgs(q query, p params) []any {
	a, err := q.args(p)
	if err != nil {
		panic(err) // a query file that disagrees with the engine is a programming error
	}
	return a
}

// Cleanup deletes processed events older than cutoff, batchSize rows per statement.
func (qu *Queue[E]) Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error) {
	batchSize = cmp.Or(batchSize, store.CleanupBatchDefault)
	total, err := dialectsql.DeleteBatches(ctx, batchSize, func() (n int64, err error) {
		err = qu.s.write(ctx, func() error {
			n, err = qu.exec(ctx, qu.s.db, "Cleanup", params{"cutoff": qu.s.encodeTime(cutoff), "batch": batchSize})
			return err
		})
		return n, err
	})
	if err != nil {
		return total, qu.op("cleanup", err)
	}
	return total, nil
}

// DeadLetters lists failed events, by id.
func (qu *Queue[E]) DeadLetters(ctx context.Context, f store.DeadLetterFilter) ([]E, error) {
	evs, err := qu.events(ctx, qu.s.db, "DeadLetters", params{
		"key": f.Key, "after": f.AfterID, "limit": cmp.Or(f.Limit, 100),
	})
	if err != nil {
		return nil, qu.op("dead letters", err)
	}
	return evs, nil
}

// Requeue returns the named failed events to pending with RetryCount 0, each
// at the end of its record's lane (requeue).
func (qu *Queue[E]) Requeue(ctx context.Context, ids ...string) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	n, err := qu.requeue(ctx, func(tx *sql.Tx) ([]failedEvent, error) {
		var out []failedEvent
		for _, id := range ids {
			evs, err := qu.failed(ctx, tx, "FailedByID", params{"id": id})
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		return out, nil
	})
	if err != nil {
		return 0, qu.op("requeue", err)
	}
	return n, nil
}

// RequeueAll returns every failed event of one key (of the queue, for a queue
// without keys) to pending, each at the end of its record's lane.
func (qu *Queue[E]) RequeueAll(ctx context.Context, key string) (int64, error) {
	n, err := qu.requeue(ctx, func(tx *sql.Tx) ([]failedEvent, error) {
		return qu.failed(ctx, tx, "FailedByKey", params{"key": key})
	})
	if err != nil {
		return 0, qu.op("requeue all", err)
	}
	return n, nil
}

// failedEvent is a dead letter about to be re-queued, with its record.
type failedEvent struct {
	id        string
	recordKey params
}

func (qu *Queue[E]) failed(ctx context.Context, tx *sql.Tx, name string, p params) ([]failedEvent, error) {
	rows, err := qu.rows(ctx, tx, name, p)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []failedEvent
	for rows.Next() {
		var id, key, objectType, recordID string
		if err := rows.Scan(&id, &key, &objectType, &recordID); err != nil {
			return nil, err
		}
		out = append(out, failedEvent{id: id, recordKey: params{"record_key": key, "object_type": objectType, "record_id": recordID}})
	}
	return out, rows.Err()
}

// requeue returns the dead letters that list finds to pending, in one
// transaction. Each gets a new Lane from its record's counter: it goes to the
// end of its record's lane, behind every event enqueued before the requeue, so
// it is never out at the same time as, nor applied after, a later change of
// its record that was already queued (store/doc.go).
func (qu *Queue[E]) requeue(ctx context.Context, list func(tx *sql.Tx) ([]failedEvent, error)) (int64, error) {
	var total int64
	err := qu.s.inTx(ctx, nil, func(tx *sql.Tx) error {
		total = 0
		evs, err := list(tx)
		if err != nil {
			return err
		}
		now := qu.s.encodeTime(qu.s.now())
		for _, e := range evs {
			lane, err := qu.nextSeq(ctx, SQLConn{tx}, e.recordKey)
			if err != nil {
				return err
			}
			n, err := qu.exec(ctx, tx, "Requeue", params{"id": e.id, "lane": lane, "now": now})
			if err != nil {
				return err
			}
			total += n
		}
		return nil
	})
	return total, err
}

func (qu *Queue[E]) stats(ctx context.Context) ([]store.StatsRow, error) {
	rows, err := qu.rows(ctx, qu.s.db, "Stats", params{})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []store.StatsRow
	for rows.Next() {
		r := store.StatsRow{Direction: qu.def.data.Dir}
		if err := rows.Scan(&r.Key, (*string)(&r.Status), &r.Count, timeCol{dst: &r.OldestCreated}); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// nextSeq increments the sequence counter of the record that p names
// (record_key, object_type, record_id) in c's transaction and returns the new
// value. The counter row stays locked until that transaction ends, so a
// record's sequences are handed out in the order their transactions commit.
func (qu *Queue[E]) nextSeq(ctx context.Context, c Conn, p params) (int64, error) {
	p["queue"] = string(qu.def.data.Dir)
	q := qu.q["NextSeq"]
	args, err := q.args(p)
	if err != nil {
		return 0, err
	}
	if get, ok := qu.q["NextSeqGet"]; ok { // an upsert that cannot return the value
		if _, err := c.Exec(ctx, q.text, args...); err != nil {
			return 0, fmt.Errorf("next sequence: %w", err)
		}
		q, args = get, mustArgs(get, p)
	}
	var seq int64
	if err := c.QueryRow(ctx, q.text, args, &seq); err != nil {
		return 0, fmt.Errorf("next sequence: %w", err)
	}
	return seq, nil
}

// recordRef names one record's sequence counter.
type recordRef struct{ key, objectType, id string }

func refOf(p params) recordRef {
	return recordRef{p["record_key"].(string), p["object_type"].(string), p["record_id"].(string)}
}

// nextSeqBatch takes the sequences of a batch of events (each p as nextSeq
// takes it) with one statement, NextSeqBatch, and stores each event's in its
// p["seq"]: a record with n events in the batch gets last-n+1 … last, in batch
// order. The counters are locked in one fixed order, by record key, object
// type and record id, for every batch, so concurrent batches do not deadlock.
func (qu *Queue[E]) nextSeqBatch(ctx context.Context, on querier, ps []params) error {
	byRecord := slices.Clone(ps)
	slices.SortStableFunc(byRecord, func(a, b params) int {
		ra, rb := refOf(a), refOf(b)
		return cmp.Or(strings.Compare(ra.key, rb.key), strings.Compare(ra.objectType, rb.objectType),
			strings.Compare(ra.id, rb.id))
	})
	type counter struct {
		Ord        int    `json:"ord"`
		RecordKey  string `json:"record_key"`
		ObjectType string `json:"object_type"`
		RecordID   string `json:"record_id"`
		N          int64  `json:"n"`
	}
	var counters []counter
	for i, p := range byRecord {
		r := refOf(p)
		if i == 0 || r != refOf(byRecord[i-1]) {
			counters = append(counters, counter{Ord: len(counters), RecordKey: r.key, ObjectType: r.objectType, RecordID: r.id})
		}
		counters[len(counters)-1].N++
	}
	doc, err := json.Marshal(counters)
	if err != nil {
		return fmt.Errorf("next sequences: %w", err)
	}
	p := params{"queue": string(qu.def.data.Dir), "records": string(doc)}
	q := qu.q["NextSeqBatch"]
	if get, ok := qu.q["NextSeqBatchGet"]; ok { // an upsert that cannot return the values
		if _, err := on.ExecContext(ctx, q.text, mustArgs(q, p)...); err != nil {
			return fmt.Errorf("next sequences: %w", err)
		}
		q = get
	}
	rows, err := on.QueryContext(ctx, q.text, mustArgs(q, p)...)
	if err != nil {
		return fmt.Errorf("next sequences: %w", err)
	}
	last := make(map[recordRef]int64, len(counters))
	for rows.Next() {
		var r recordRef
		var seq int64
		if err := rows.Scan(&r.key, &r.objectType, &r.id, &seq); err != nil {
			rows.Close()
			return fmt.Errorf("next sequences: %w", err)
		}
		last[r] = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("next sequences: %w", err)
	}
	next := make(map[recordRef]int64, len(counters))
	for _, c := range counters {
		r := recordRef{key: c.RecordKey, objectType: c.ObjectType, id: c.RecordID}
		l, ok := last[r]
		if !ok {
			return fmt.Errorf("next sequences: no counter returned for record %s/%s/%s", r.key, r.objectType, r.id)
		}
		next[r] = l - c.N + 1
	}
	for _, p := range byRecord {
		r := refOf(p)
		p["seq"] = next[r]
		next[r]++
	}
	return nil
}

// insert writes one event through c. key is the idempotency key, "" for queues
// without one.
// It first takes the event's sequence from its record's counter (nextSeq), in
// the insert's own statement where the dialect has InsertNext.
func (qu *Queue[E]) insert(ctx context.Context, c Conn, p params, idemKey string) (store.EnqueueResult, error) {
	if q, ok := qu.q["InsertNext"]; ok && idemKey == "" {
		p["queue"] = string(qu.def.data.Dir)
		args, err := q.args(p)
		if err != nil {
			return store.EnqueueResult{}, err
		}
		n, err := c.Exec(ctx, q.text, args...)
		if err != nil {
			return store.EnqueueResult{}, err
		}
		if n == 0 {
			return store.EnqueueResult{}, errors.New("insert affected no row")
		}
		return store.EnqueueResult{ID: p["id"].(string), Inserted: true}, nil
	}
	seq, err := qu.nextSeq(ctx, c, p)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	p["seq"] = seq
	return qu.insertSeq(ctx, c, p, idemKey)
}

// insertSeq is insert of an event whose sequence p["seq"] is already taken.
func (qu *Queue[E]) insertSeq(ctx context.Context, c Conn, p params, idemKey string) (store.EnqueueResult, error) {
	q := qu.q["Insert"]
	args, err := q.args(p)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	n, err := c.Exec(ctx, q.text, args...)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	if n > 0 {
		return store.EnqueueResult{ID: p["id"].(string), Inserted: true}, nil
	}
	if idemKey == "" {
		return store.EnqueueResult{}, errors.New("insert affected no row")
	}
	lookup := qu.q["IDByIdempotencyKey"]
	var id string
	if err := c.QueryRow(ctx, lookup.text, mustArgs(lookup, params{"idempotency_key": idemKey}), &id); err != nil {
		return store.EnqueueResult{}, fmt.Errorf("look up duplicate idempotency key %q: %w", idemKey, err)
	}
	return store.EnqueueResult{ID: id, Inserted: false}, nil
}
