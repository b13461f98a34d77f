package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/store"
)

// Defaults of Reconcile.
const (
	ReconcileLimitDefault = 250
	ReconcileLimitMax     = 1000
	// ReconcileAfterDefault is how long a due event may wait unclaimed before the
	// reconciliation sweep reports it (seed 002: pendingOlderThanMinutes 10).
	ReconcileAfterDefault = 10 * time.Minute
)

// Reasons a reconciliation candidate is reported for.
const (
	// ReasonExpiredLease: the event is processing but its lease ran out; the worker
	// holding it died or stalled. The next claim of its key takes it again.
	ReasonExpiredLease = "expired_lease"
	// ReasonOverdue: the event has been due for longer than OlderThan and nobody
	// claimed it: no worker serves its key, or the workers are behind or out of
	// API budget.
	ReasonOverdue = "overdue"
)

// ReconcileRequest asks for a reconciliation sweep (seed 002's
// findReconciliationCandidates).
type ReconcileRequest struct {
	// OlderThan is a Go duration ("10m"): due events waiting longer are reported.
	// Default ReconcileAfterDefault.
	OlderThan string `json:"older_than,omitempty"`
	// Limit is the most events examined per queue key; default ReconcileLimitDefault.
	Limit int `json:"limit,omitempty"`
}

// ReconcileCandidate is one event the sweep found.
type ReconcileCandidate struct {
	Direction        store.Direction `json:"direction"`
	Key              string          `json:"key"`
	ID               string          `json:"id"`
	Reason           string          `json:"reason"`
	Status           store.Status    `json:"status"`
	CreatedDate      time.Time       `json:"created_date"`
	NextAttemptDate  time.Time       `json:"next_attempt_date"`
	LeaseOwner       string          `json:"lease_owner,omitempty"`
	LeaseExpiresDate *time.Time      `json:"lease_expires_date,omitempty"`
	RetryCount       int             `json:"retry_count"`
	// Attempt is the fencing value of the candidate's last claim: a repair
	// releases an expired lease under it, so a lease re-claimed meanwhile is
	// left alone.
	Attempt int `json:"attempt"`
	// Scheduled is set by Repair when the candidate was scheduled again.
	Scheduled bool `json:"scheduled,omitempty"`
}

// ReconcileQueue summarises the sweep of one queue key.
type ReconcileQueue struct {
	Direction     store.Direction `json:"direction"`
	Key           string          `json:"key"`
	Checked       int             `json:"checked"`
	Overdue       int             `json:"overdue"`
	ExpiredLeases int             `json:"expired_leases"`
	// OldestPendingAgeSeconds comes from the queue statistics; for the internal
	// queue it is all the sweep knows.
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
}

// ReconcileResult is the sweep's report.
type ReconcileResult struct {
	Checked    int                  `json:"checked"`
	Scheduled  int                  `json:"scheduled"`
	Queues     []ReconcileQueue     `json:"queues"`
	Candidates []ReconcileCandidate `json:"candidates"`
	Note       string               `json:"note"`

	now       time.Time
	olderThan time.Duration
}

const reconcileNote = "report only (scheduled is 0): every candidate listed is claimable by the next claim of its key. " +
	"Expired leases mean a worker died or stalled; overdue events mean no worker serves the key, the workers are " +
	"behind or out of API budget, or (push dispatch) the event's message was lost. Repair schedules them again."

// Reconcile is the finding half of seed 002's reconciliation sweep: expired
// leases, and due events unclaimed for longer than OlderThan. It changes
// nothing; Repair runs it and then schedules the candidates again (the
// admin API's and the cron's sweep).
//
// Inbound and outbound events are examined per key with GetPending (oldest
// first, at most Limit each); the internal queue is reported from the queue
// statistics only.
func Reconcile(ctx context.Context, st store.Store, req ReconcileRequest) (ReconcileResult, error) {
	olderThan := ReconcileAfterDefault
	if req.OlderThan != "" {
		d, err := time.ParseDuration(req.OlderThan)
		if err != nil || d < 0 {
			return ReconcileResult{}, fmt.Errorf("%w: older_than %q is not a duration such as \"10m\"", ErrBadRequest, req.OlderThan)
		}
		olderThan = d
	}
	if req.Limit < 0 {
		return ReconcileResult{}, fmt.Errorf("%w: limit %d is negative", ErrBadRequest, req.Limit)
	}
	limit := min(cmp.Or(req.Limit, ReconcileLimitDefault), ReconcileLimitMax)

	m, err := LoadMetrics(ctx, st)
	if err != nil {
		return ReconcileResult{}, err
	}
	now := m.Now
	res := ReconcileResult{Candidates: []ReconcileCandidate{}, Queues: []ReconcileQueue{}, Note: reconcileNote, now: now, olderThan: olderThan}
	for _, q := range m.Queues {
		rq := ReconcileQueue{Direction: q.Direction, Key: q.Key, OldestPendingAgeSeconds: q.OldestPendingAgeSeconds}
		if q.Counts[store.StatusPending]+q.Counts[store.StatusProcessing] == 0 {
			continue
		}
		var states []store.EventHeader
		if q.Direction != store.DirectionInternal {
			qu, err := queueOf(st, q.Direction)
			if err != nil {
				return res, err
			}
			if states, err = qu.getPending(ctx, q.Key, limit); err != nil {
				return res, fmt.Errorf("reconcile %s %s: %w", q.Direction, q.Key, err)
			}
		}
		rq.Checked = len(states)
		for _, s := range states {
			c := ReconcileCandidate{
				Direction: q.Direction, Key: q.Key, ID: s.ID, Status: s.Status,
				CreatedDate: s.CreatedDate, NextAttemptDate: s.NextAttemptDate,
				LeaseOwner: s.LeaseOwner, LeaseExpiresDate: s.LeaseExpiresDate, RetryCount: s.RetryCount,
				Attempt: s.Attempt,
			}
			switch {
			case s.Status == store.StatusProcessing && s.LeaseExpiresDate != nil && !s.LeaseExpiresDate.After(now):
				c.Reason = ReasonExpiredLease
				rq.ExpiredLeases++
			case s.Status == store.StatusPending && !s.NextAttemptDate.After(now.Add(-olderThan)):
				c.Reason = ReasonOverdue
				rq.Overdue++
			default:
				continue
			}
			res.Candidates = append(res.Candidates, c)
		}
		res.Checked += rq.Checked
		res.Queues = append(res.Queues, rq)
	}
	return res, nil
}

// Scheduler schedules reconciliation candidates again: in poll mode
// (PollScheduler) it releases expired leases for the next claim; in push
// mode (dispatch.Rescheduler) it also publishes again what was published
// long ago and never finished. Schedule sets Scheduled on each candidate it
// scheduled and must be idempotent: a candidate already scheduled, or
// finished meanwhile, is left alone.
type Scheduler interface {
	Schedule(ctx context.Context, st store.Store, now time.Time, olderThan time.Duration, cands []ReconcileCandidate) error
}

const repairNote = "each candidate marked scheduled was scheduled again: an expired lease was released for the next claim " +
	"(its events are fenced, so a late worker changes nothing), and in push mode an event published at least older_than ago " +
	"and still unfinished was published again under a new deduplication id (a late delivery of the old message is a no-op)."

// Repair is Reconcile followed by the repair (seed 002's
// scheduleCandidatesIdempotently): sched schedules the candidates again, and
// Scheduled counts those it did. A nil sched is PollScheduler.
func Repair(ctx context.Context, st store.Store, req ReconcileRequest, sched Scheduler) (ReconcileResult, error) {
	res, err := Reconcile(ctx, st, req)
	if err != nil {
		return res, err
	}
	if sched == nil {
		sched = PollScheduler{}
	}
	if err := sched.Schedule(ctx, st, res.now, res.olderThan, res.Candidates); err != nil {
		return res, fmt.Errorf("reconcile: schedule: %w", err)
	}
	for _, c := range res.Candidates {
		if c.Scheduled {
			res.Scheduled++
		}
	}
	res.Note = repairNote
	return res, nil
}

// PollScheduler is the repair of poll mode: it releases each expired lease,
// fenced by its attempt, so the event is pending and claimable at once.
// Overdue pending events are claimable already and need nothing.
type PollScheduler struct{}

// Schedule implements Scheduler.
func (PollScheduler) Schedule(ctx context.Context, st store.Store, _ time.Time, _ time.Duration, cands []ReconcileCandidate) error {
	return ReleaseExpired(ctx, st, cands)
}

// ReleaseExpired releases the expired leases among cands, each under its own
// attempt, and marks those released Scheduled. A lease lost meanwhile (the
// event was claimed again) is skipped.
func ReleaseExpired(ctx context.Context, st store.Store, cands []ReconcileCandidate) error {
	for i := range cands {
		c := &cands[i]
		if c.Reason != ReasonExpiredLease {
			continue
		}
		var err error
		lease := store.Lease{ID: c.ID, Attempt: c.Attempt}
		switch c.Direction {
		case store.DirectionInbound:
			err = st.Inbound().Release(ctx, 0, lease)
		case store.DirectionOutbound:
			err = st.Outbound().Release(ctx, 0, lease)
		case store.DirectionInternal:
			err = st.Internal().Release(ctx, 0, lease)
		}
		switch {
		case errors.Is(err, store.ErrLeaseLost):
		case err != nil:
			return fmt.Errorf("release %s %s: %w", c.Direction, c.ID, err)
		default:
			c.Scheduled = true
		}
	}
	return nil
}
