package subscriptions

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// ObjectType is the outbound events' ObjectType of subscription requests;
// their RecordID is Request.RecordID.
const ObjectType = "subscriptions"

// Errors of the Store.
var (
	// ErrConflict is returned by Submit when the Idempotency-Key was already
	// used for another request of the same brand and product.
	ErrConflict = errors.New("subscriptions: Idempotency-Key already used for a different request")
	// ErrNotFound is returned by Get for an unknown id.
	ErrNotFound = errors.New("subscriptions: request not found")
	// ErrInvalidKey is returned by Submit for an empty or too long Idempotency-Key.
	ErrInvalidKey = errors.New("subscriptions: invalid Idempotency-Key")
)

// Store holds subscription requests and contact states in the database of a
// store.Store, and writes their outbound events into its outbound queue.
type Store struct {
	st          store.Store
	db          *sql.DB
	d           store.Dialect
	q           *dialectsql.Queries
	destination string
	// beforeReplay, when set, runs between an insert that found its key
	// taken and the read of the request holding it (tests).
	beforeReplay func()
}

// NewStore returns the subscription store of st's database; events go to
// destination "hubspot". It panics on a dialect hubsync does not know, which
// no backend has.
func NewStore(st store.Store) *Store {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		panic(err)
	}
	return &Store{st: st, db: st.DB(), d: st.Dialect(), q: q, destination: outbox.SyncSourceHubSpot}
}

// SubmitResult is what Submit did.
type SubmitResult struct {
	Stored
	// Replayed is true when the key was already used for this very request:
	// nothing was written and Stored is the original.
	Replayed bool
}

// Submit stores r under Idempotency-Key key with the mapping version it was
// accepted under. In one transaction it takes the next sequence of r's
// contact, inserts the request and enqueues its outbound event. A key
// already used by an equal request answers that request (Replayed); by
// another request, ErrConflict, writing nothing.
func (s *Store) Submit(ctx context.Context, r Request, key string, mappingVersion int) (SubmitResult, error) {
	if key == "" || len(key) > MaxIdempotencyKeyLength {
		return SubmitResult{}, fmt.Errorf("%w: use 1-%d characters", ErrInvalidKey, MaxIdempotencyKeyLength)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return SubmitResult{}, fmt.Errorf("subscriptions: new id: %w", err)
	}
	// A key whose request the cleanup deletes between the insert that finds
	// it taken and the read of that request is free again: the request is
	// then a new one, inserted on the second pass.
	for pass := 1; ; pass++ {
		res, found, err := s.submit(ctx, r, key, mappingVersion, id)
		if err == nil && !found {
			if pass == 1 {
				continue
			}
			err = fmt.Errorf("subscriptions: submit: key %q was taken, but no request holds it now", key)
		}
		return res, err
	}
}

// submit is one pass of Submit: found is false when the key was taken by a
// request that is gone by the time it is read.
func (s *Store) submit(ctx context.Context, r Request, key string, mappingVersion int, id uuid.UUID) (_ SubmitResult, found bool, err error) {
	now := s.st.Now().UTC().Truncate(time.Microsecond)
	hash := r.Hash()
	inserted := false
	var seq int64
	err = dialectsql.InTxRetry(ctx, s.db, s.st.Retryable, "subscriptions: submit", func(tx *sql.Tx) error {
		inserted = false
		if _, err := tx.ExecContext(ctx, s.q.Get("sequence_next"), r.BrandID, r.ProductID, r.ContactKey); err != nil {
			return fmt.Errorf("subscriptions: next sequence: %w", err)
		}
		if err := tx.QueryRowContext(ctx, s.q.Get("sequence_get"), r.BrandID, r.ProductID, r.ContactKey).Scan(&seq); err != nil {
			return fmt.Errorf("subscriptions: read sequence: %w", err)
		}
		res, err := tx.ExecContext(ctx, s.q.Get("request_insert"), id.String(), r.BrandID, r.ProductID, r.ContactKey,
			r.DesiredState, mappingVersion, key, hash, seq, dialectsql.Time(s.d, now), dialectsql.Time(s.d, now))
		if err != nil {
			return fmt.Errorf("subscriptions: insert request: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return fmt.Errorf("subscriptions: insert request: %w", err)
		} else if n == 0 {
			return errDuplicate // roll the sequence back
		}
		payload, err := json.Marshal(eventPayload{RequestID: id.String(), Sequence: seq, BrandID: r.BrandID, ProductID: r.ProductID,
			ContactKey: r.ContactKey, DesiredState: r.DesiredState, MappingVersion: mappingVersion})
		if err != nil {
			return err
		}
		if _, err := s.st.Outbound().EnqueueTx(ctx, tx, store.OutboundEvent{Destination: s.destination, ObjectType: ObjectType,
			RecordID: r.RecordID(), EventType: store.EventUpdate, Payload: payload}); err != nil {
			return fmt.Errorf("subscriptions: enqueue: %w", err)
		}
		inserted = true
		return nil
	})
	switch {
	case errors.Is(err, errDuplicate):
	case err != nil:
		return SubmitResult{}, true, err
	}
	if inserted {
		return SubmitResult{Stored: Stored{ID: id.String(), Request: r, MappingVersion: mappingVersion, IdempotencyKey: key,
			RequestHash: hash, SyncStatus: StatusPending, AppliedSequence: seq, CreatedAt: now, UpdatedAt: now}}, true, nil
	}
	if s.beforeReplay != nil {
		s.beforeReplay()
	}
	// The key exists: read it after the transaction, so that the row another
	// transaction committed is visible whatever the isolation level.
	return s.Replay(ctx, r, key)
}

// Replay answers a retry of r under key without writing: the request
// stored under the key (Replayed), ErrConflict when the key belongs to
// another request, or found false when the key is new. The handler asks it
// before refusing a request its mapping no longer knows, so that a retry of
// a request accepted before the mapping changed is still answered.
func (s *Store) Replay(ctx context.Context, r Request, key string) (res SubmitResult, found bool, err error) {
	prev, err := s.scanOne(ctx, s.db, "request_get_by_key", r.BrandID, r.ProductID, key)
	switch {
	case errors.Is(err, ErrNotFound):
		return SubmitResult{}, false, nil
	case err != nil:
		return SubmitResult{}, false, err
	}
	if hash := r.Hash(); prev.RequestHash != hash {
		return SubmitResult{Stored: prev}, true, fmt.Errorf("%w: key %q of brand %s, product %s belongs to request %s (%s %s); send a new key for a new request",
			ErrConflict, key, r.BrandID, r.ProductID, prev.ID, prev.ContactKey, prev.DesiredState)
	}
	return SubmitResult{Stored: prev, Replayed: true}, true, nil
}

var errDuplicate = errors.New("duplicate idempotency key")

// Get returns a request by id; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, id string) (Stored, error) {
	return s.scanOne(ctx, s.db, "request_get", id)
}

// Newest returns the newest request of a contact; ErrNotFound when it has none.
func (s *Store) Newest(ctx context.Context, brandID, productID, contactKey string) (Stored, error) {
	return s.scanOne(ctx, s.db, "request_newest", brandID, productID, contactKey)
}

func (s *Store) scanOne(ctx context.Context, q store.DBTX, query string, args ...any) (Stored, error) {
	var r Stored
	err := q.QueryRowContext(ctx, s.q.Get(query), args...).Scan(&r.ID, &r.BrandID, &r.ProductID, &r.ContactKey, &r.DesiredState,
		&r.MappingVersion, &r.IdempotencyKey, &r.RequestHash, &r.SyncStatus, &r.SyncDetail, &r.AppliedSequence,
		dialectsql.TimeDest(&r.CreatedAt), dialectsql.TimeDest(&r.UpdatedAt))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Stored{}, ErrNotFound
	case err != nil:
		return Stored{}, fmt.Errorf("subscriptions: %s: %w", query, err)
	}
	return r, nil
}

// State is the state HubSpot was last settled to for one contact.
type State struct {
	BrandID, ProductID, ContactKey string
	// DesiredState is the state of the request at AppliedSequence.
	DesiredState string
	// AppliedSequence is the newest sequence settled; 0 for none.
	AppliedSequence int64
	UpdatedAt       time.Time
}

// State returns a contact's settled state; AppliedSequence 0 when none.
func (s *Store) State(ctx context.Context, brandID, productID, contactKey string) (State, error) {
	st := State{BrandID: brandID, ProductID: productID, ContactKey: contactKey}
	err := s.db.QueryRowContext(ctx, s.q.Get("state_get"), brandID, productID, contactKey).Scan(&st.DesiredState, &st.AppliedSequence, dialectsql.TimeDest(&st.UpdatedAt))
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return State{}, fmt.Errorf("subscriptions: state: %w", err)
	}
	return st, nil
}

// States lists every contact with a settled state.
func (s *Store) States(ctx context.Context) ([]State, error) {
	rows, err := s.db.QueryContext(ctx, s.q.Get("state_list"))
	if err != nil {
		return nil, fmt.Errorf("subscriptions: states: %w", err)
	}
	defer rows.Close()
	var out []State
	for rows.Next() {
		var st State
		if err := rows.Scan(&st.BrandID, &st.ProductID, &st.ContactKey, &st.DesiredState, &st.AppliedSequence, dialectsql.TimeDest(&st.UpdatedAt)); err != nil {
			return nil, fmt.Errorf("subscriptions: states: %w", err)
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Settle records, in one transaction, that the contact's requests up to
// newest were settled: the contact's state advances to newest's sequence and
// state (only if it is newer, the seed's conditional update), newest's
// request becomes status (StatusSynced or StatusFailed, with detail; a
// failed request whose re-queued event was pushed becomes StatusSynced), and
// every older request still pending becomes StatusSuperseded (and, when
// status is StatusSynced, every older failed one too). advanced is false
// when the state was already at or past newest.
func (s *Store) Settle(ctx context.Context, newest Stored, status, detail string) (advanced bool, err error) {
	now := dialectsql.Time(s.d, s.st.Now())
	err = dialectsql.InTxRetry(ctx, s.db, s.st.Retryable, "subscriptions: settle", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.q.Get("state_ensure"), newest.BrandID, newest.ProductID, newest.ContactKey, now); err != nil {
			return fmt.Errorf("subscriptions: settle: %w", err)
		}
		res, err := tx.ExecContext(ctx, s.q.Get("state_advance"), newest.AppliedSequence, newest.DesiredState, now,
			newest.BrandID, newest.ProductID, newest.ContactKey, newest.AppliedSequence)
		if err != nil {
			return fmt.Errorf("subscriptions: settle: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("subscriptions: settle: %w", err)
		}
		advanced = n > 0
		if _, err := tx.ExecContext(ctx, s.q.Get("request_set_status"), status, truncate(detail), now, newest.ID, status); err != nil {
			return fmt.Errorf("subscriptions: settle: %w", err)
		}
		if _, err := tx.ExecContext(ctx, s.q.Get("request_supersede_older"), now, newest.BrandID, newest.ProductID, newest.ContactKey, newest.AppliedSequence, status); err != nil {
			return fmt.Errorf("subscriptions: settle: %w", err)
		}
		return nil
	})
	return advanced, err
}

// SetStatus settles one pending request (e.g. StatusFailed when its event
// was dead-lettered, StatusSuperseded when a newer one was settled first). A
// request already settled keeps its status, but for a failed one becoming
// synced or superseded (its event re-queued).
func (s *Store) SetStatus(ctx context.Context, id, status, detail string) error {
	if _, err := s.db.ExecContext(ctx, s.q.Get("request_set_status"), status, truncate(detail), dialectsql.Time(s.d, s.st.Now()), id, status); err != nil {
		return fmt.Errorf("subscriptions: set status of %s: %w", id, err)
	}
	return nil
}

// Cleanup deletes, batchSize rows per statement (0 means
// store.CleanupBatchDefault), the requests settled for good (synced or
// superseded) whose last change came before cutoff and that are not the
// newest request of their contact, and returns how many it deleted. A
// contact's newest request stays whatever its age: the pusher reads it
// (Newest) to send HubSpot the state it must end in. Pending and failed
// requests stay too: a failed one becomes synced or superseded once its
// event is re-queued.
//
// A deleted request's Idempotency-Key is free again: a retry under it is a
// new request, as a key of the records API is once its retention ends. Get
// answers ErrNotFound for its id.
//
// Each status is read in (updated_at, id) order from where the last batch
// ended, so the newest requests passed over are read once per run. Several
// replicas may run it at once: each delete checks its rows again.
func (s *Store) Cleanup(ctx context.Context, cutoff time.Time, batchSize int) (int64, error) {
	batchSize = cmp.Or(batchSize, store.CleanupBatchDefault)
	cut := dialectsql.Time(s.d, cutoff)
	var total int64
	for _, status := range []string{StatusSuperseded, StatusSynced} {
		// Every request was changed after 1970: the first batch starts there.
		after, afterID := time.Unix(0, 0), ""
		for {
			ids, last, lastID, err := s.cleanupBatch(ctx, status, cut, after, afterID, batchSize)
			if err != nil {
				return total, err
			}
			if len(ids) > 0 {
				n, err := s.cleanupDelete(ctx, ids, cut)
				total += n
				if err != nil {
					return total, err
				}
			}
			if len(ids) < batchSize {
				break
			}
			if err := ctx.Err(); err != nil {
				return total, fmt.Errorf("subscriptions: clean up: %w", err)
			}
			after, afterID = last, lastID
		}
	}
	return total, nil
}

// cleanupBatch reads the ids of the next batch of requests of status that
// Cleanup deletes, after the cursor (after, afterID), and the cursor past it.
func (s *Store) cleanupBatch(ctx context.Context, status string, cut any, after time.Time, afterID string, batchSize int) (ids []string, last time.Time, lastID string, err error) {
	a := dialectsql.Time(s.d, after)
	rows, err := s.db.QueryContext(ctx, s.q.Get("request_cleanup_select"), status, cut, a, a, afterID, batchSize)
	if err != nil {
		return nil, time.Time{}, "", fmt.Errorf("subscriptions: clean up %s requests: %w", status, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&lastID, dialectsql.TimeDest(&last)); err != nil {
			return nil, time.Time{}, "", fmt.Errorf("subscriptions: clean up %s requests: %w", status, err)
		}
		ids = append(ids, lastID)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, "", fmt.Errorf("subscriptions: clean up %s requests: %w", status, err)
	}
	return ids, last, lastID, nil
}

// cleanupDelete deletes the requests ids that are still settled for good
// and last changed before cut, run again on a deadlock (a Settle may lock
// the same contact's requests).
func (s *Store) cleanupDelete(ctx context.Context, ids []string, cut any) (int64, error) {
	list, err := json.Marshal(ids)
	if err != nil {
		return 0, fmt.Errorf("subscriptions: clean up: %w", err)
	}
	var n int64
	err = dialectsql.Retry(ctx, s.st.Retryable, func() error {
		res, err := s.db.ExecContext(ctx, s.q.Get("request_cleanup_delete"), string(list), cut)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("subscriptions: clean up: %w", err)
	}
	return n, nil
}

// CountRequests counts the requests of a contact (tests and the demo).
func (s *Store) CountRequests(ctx context.Context, brandID, productID, contactKey string) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, s.q.Get("request_count"), brandID, productID, contactKey).Scan(&n); err != nil {
		return 0, fmt.Errorf("subscriptions: count: %w", err)
	}
	return n, nil
}

func truncate(s string) string {
	if len(s) > 900 {
		return strings.ToValidUTF8(s[:900], "")
	}
	return s
}
