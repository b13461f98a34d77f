package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/leasekeep"
	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/store"
)

// Defaults of Config.
const (
	BatchSizeDefault    = 100
	PollIntervalDefault = time.Second
	// LeaseDurationDefault is how long a claim holds its events unless
	// extended. A heartbeat extends the batch's leases every third of it while
	// the batch is delivered, so it bounds how long a crashed relay's events
	// wait (issue 16: well within 30 s), not how long a delivery may take.
	LeaseDurationDefault = 15 * time.Second
	// ReleaseTimeoutDefault bounds releasing leases when a stop cancels work.
	ReleaseTimeoutDefault = 5 * time.Second
)

// The lifecycle errors every hubsync service returns; they are the same
// values in every package (relay.ErrStarted == outbound.ErrStarted).
var (
	// ErrStarted is returned by Start on a running relay.
	ErrStarted = startstop.ErrStarted
	// ErrStopped is returned by Start after Stop: a Relay runs once.
	ErrStopped = startstop.ErrStopped
)

// Config configures a Relay. The zero value means the defaults.
type Config struct {
	// Owner names this relay in lease rows; default "host/pid/relay-random".
	Owner string
	// BatchSize is the most records a claim takes, each with its due events
	// (up to store.MaxPerRecordDefault of them); default BatchSizeDefault.
	BatchSize int
	// PollInterval is the wait between claims when the queue is empty; default
	// PollIntervalDefault. Notify wakes the relay early.
	PollInterval time.Duration
	// LeaseDuration is how long a claim holds its events unless extended: a
	// heartbeat extends the batch's leases every LeaseDuration/3 while it is
	// delivered, so it is how long a crashed relay's events wait, however
	// long the subscribers take. At least a second (the heartbeat's period is
	// a third of it); default LeaseDurationDefault.
	LeaseDuration time.Duration
	// RetryDelay is the least wait before an event whose subscriber failed is
	// tried again; the store's retry policy may wait longer. Default 0.
	RetryDelay time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now is the relay's clock, which should be the store's; default
	// time.Now. The store stamps leases with its own clock; the relay reads
	// this one only to know when its heartbeat began.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	b := service.NewBase("relay", service.Base{Logger: c.Logger, Now: c.Now, Owner: c.Owner})
	c.Logger, c.Now, c.Owner = b.Logger, b.Now, b.Owner
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, LeaseDurationDefault)
	return c
}

func (c Config) validate() error {
	switch {
	case c.BatchSize < 0:
		return fmt.Errorf("relay: Config.BatchSize is %d; use a positive number (0 means %d)", c.BatchSize, BatchSizeDefault)
	case c.PollInterval < 0:
		return fmt.Errorf("relay: Config.PollInterval is %s; use a positive duration (0 means %s)", c.PollInterval, PollIntervalDefault)
	case c.LeaseDuration < time.Second:
		return fmt.Errorf("relay: Config.LeaseDuration is %s; heartbeats run every third of it, so use at least 1s (0 means %s)", c.LeaseDuration, LeaseDurationDefault)
	case c.RetryDelay < 0:
		return fmt.Errorf("relay: Config.RetryDelay is %s; it must not be negative", c.RetryDelay)
	}
	return nil
}

// Relay moves internal events from the store to a Bus. It is a service:
// Start returns at once, Stop stops it gracefully; RunOnce runs one cycle.
type Relay struct {
	st  store.Store
	bus *Bus
	cfg Config
	log *slog.Logger
	q   *dialectsql.Queries

	notify chan struct{}
	svc    startstop.Service

	mu        sync.Mutex
	noRelease bool // a simulated crash: leave leases to expire
}

// New returns a relay from st's internal queue to bus.
func New(st store.Store, bus *Bus, cfg Config) (*Relay, error) {
	if st == nil || bus == nil {
		return nil, errors.New("relay: New needs a store and a bus")
	}
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	q, err := loadQueries(st.Dialect())
	if err != nil {
		return nil, err
	}
	return &Relay{st: st, bus: bus, cfg: cfg, log: cfg.Logger, q: q, notify: make(chan struct{}, 1)}, nil
}

// Start starts the relay loop and returns at once; ErrStarted when it runs
// already, ErrStopped after Stop. Cancelling ctx stops the relay hard (see
// Stop).
func (r *Relay) Start(ctx context.Context) error {
	return r.svc.Start(ctx, func(workCtx context.Context, stop <-chan struct{}) {
		// The loop stops claiming on a graceful stop; deliveries run under
		// workCtx, which only a hard stop ends.
		loopCtx, stopClaims := context.WithCancel(workCtx)
		defer stopClaims()
		go func() {
			select {
			case <-stop:
				stopClaims()
			case <-loopCtx.Done():
			}
		}()
		r.loop(loopCtx, workCtx)
	})
}

// Notify wakes the relay to claim now instead of at the next poll. Call it after
// committing a write that enqueued internal events.
func (r *Relay) Notify() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Stop stops claiming, lets the event being delivered finish, releases the rest
// of the batch, and waits for the loop to end. When ctx ends first, the delivery
// in flight is cancelled and its lease released too (a hard stop); Stop then
// still waits for the loop and returns ctx's error. Stop is idempotent and safe
// on a relay that was never started.
func (r *Relay) Stop(ctx context.Context) error { return r.svc.Stop(ctx) }

// Done is closed once the relay has stopped: its loop has ended, or it was
// stopped before it started.
func (r *Relay) Done() <-chan struct{} { return r.svc.Done() }

// crash stops the relay the way a killed process does: the delivery in flight
// is cancelled and no lease is released or completed, so the events wait for
// their leases to expire. For tests.
func (r *Relay) crash() {
	r.mu.Lock()
	r.noRelease = true
	r.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = r.svc.Stop(ctx) // an ended context: the hard stop
}

func (r *Relay) crashed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.noRelease
}

func (r *Relay) loop(loopCtx, workCtx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-loopCtx.Done():
			return
		case <-timer.C:
		case <-r.notify:
		}
		n, err := r.runOnce(loopCtx, workCtx)
		if err != nil && !errors.Is(err, context.Canceled) {
			r.log.Error("relay: run", slog.String("owner", r.cfg.Owner), slog.Any("error", err))
		}
		wait := r.cfg.PollInterval
		if err == nil && n > 0 {
			// Claim again at once: there may be more, and a claim takes at most
			// BatchSize records, each its head event with the followers already
			// due, so the rest becomes claimable only now.
			wait = 0
		}
		timer.Reset(wait)
	}
}

// RunOnce claims one batch and delivers it, without the loop: for tools and
// tests that drive the relay step by step. It returns how many events it claimed
// and the delivery errors, joined.
func (r *Relay) RunOnce(ctx context.Context) (int, error) { return r.runOnce(ctx, ctx) }

// runOnce claims one batch and delivers it. Moving on to the next event stops
// when stopCtx ends (the rest of the batch is released); deliveries run under
// workCtx.
func (r *Relay) runOnce(stopCtx, workCtx context.Context) (int, error) {
	if stopCtx.Err() != nil {
		return 0, stopCtx.Err()
	}
	// The lease runs from before the claim at the latest.
	expiry := r.cfg.Now().Add(r.cfg.LeaseDuration)
	evs, err := r.st.Internal().Claim(workCtx, store.ClaimParams{
		Limit: r.cfg.BatchSize, LeaseDuration: r.cfg.LeaseDuration, Owner: r.cfg.Owner,
	})
	if err != nil {
		return 0, fmt.Errorf("relay: claim: %w", err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	leases := make([]store.Lease, len(evs))
	for i, ev := range evs {
		leases[i] = ev.Lease()
	}
	// Deliveries take as long as the subscribers do: the heartbeat keeps the
	// batch leased meanwhile, so the lease itself can be short.
	keep := leasekeep.Start(workCtx, r.st.Internal(), leasekeep.Config{
		Leases: leases, Duration: r.cfg.LeaseDuration, Expiry: expiry, Now: r.cfg.Now, Logger: r.log,
	})
	defer keep.Stop()
	var errs []error
	held := map[string]bool{}       // records with a failed event in this batch
	delivered := map[string]int64{} // the highest Seq delivered per record in this batch
	done := completer{r: r}
	for i, ev := range evs {
		if stopCtx.Err() != nil || workCtx.Err() != nil {
			errs = append(errs, done.flush(workCtx))
			r.release(evs[i:])
			return len(evs), errors.Join(append(errs, context.Canceled)...)
		}
		if keep.Lost() {
			// This relay stalled past its lease and another claimed some of
			// the batch again: deliver no more of it (the rest is released,
			// fenced, so only what is still ours goes back).
			errs = append(errs, done.flush(workCtx))
			r.release(evs[i:])
			return len(evs), errors.Join(append(errs, fmt.Errorf("relay: batch of %d events: %w", len(evs), store.ErrLeaseLost))...)
		}
		key := ev.ObjectType + "\x00" + ev.RecordID
		if held[key] {
			// Keep the record's order: its earlier event has to succeed first.
			r.release([]store.InternalEvent{ev})
			continue
		}
		newer, err := r.supersededBy(workCtx, ev)
		if seq := delivered[key]; err == nil && seq > ev.Seq {
			newer = seq // delivered earlier in this batch, not yet marked processed
		}
		if err != nil {
			held[key] = true
			r.release([]store.InternalEvent{ev})
			errs = append(errs, err)
			continue
		}
		if newer > 0 {
			// A re-queued dead letter after a later event of its record
			// reached the bus: delivering it now would undo that one.
			r.log.Warn("relay: re-queued event not delivered: a later event of its record was delivered already",
				slog.String("event", ev.ID), slog.String("record", ev.ObjectType+"/"+ev.RecordID),
				slog.Int64("seq", ev.Seq), slog.Int64("delivered_seq", newer))
			if err := done.add(workCtx, ev.Lease()); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := r.deliver(workCtx, ev); err != nil {
			held[key] = true
			errs = append(errs, err)
			continue
		}
		delivered[key] = max(delivered[key], ev.Seq)
		if err := done.add(workCtx, ev.Lease()); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, done.flush(workCtx))
	return len(evs), errors.Join(errs...)
}

// completeChunk is the most delivered events the relay holds before marking
// them processed in one store call.
const completeChunk = 100

// completer marks a batch's delivered events processed, completeChunk at a
// time. One call per event was a transaction each (with PostgreSQL's lane
// triggers), the relay's main cost when the subscribers are fast; a relay
// that crashes between a delivery and its chunk's call delivers those events
// again, which at-least-once delivery allows.
type completer struct {
	r      *Relay
	leases []store.Lease
}

// add holds a delivered event's lease, completing the chunk when it is full.
func (c *completer) add(ctx context.Context, l store.Lease) error {
	c.leases = append(c.leases, l)
	if len(c.leases) < completeChunk {
		return nil
	}
	return c.flush(ctx)
}

// flush marks the held events processed, even after a stop: their deliveries
// have happened (ctx's cancellation is ignored). A crashed relay completes
// nothing, as a killed process.
func (c *completer) flush(ctx context.Context) error {
	leases := c.leases
	c.leases = nil
	if len(leases) == 0 || c.r.crashed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeoutDefault)
	defer cancel()
	if err := c.r.st.Internal().Complete(ctx, leases...); err != nil {
		return fmt.Errorf("relay: complete %d delivered events: %w", len(leases), err)
	}
	return nil
}

// deliver hands one event to the bus; on a failure it records the retry. The
// caller completes a delivered event.
func (r *Relay) deliver(ctx context.Context, ev store.InternalEvent) error {
	pubErr := r.bus.Publish(ctx, ev)
	if ctx.Err() != nil {
		// Stopped mid-delivery: the event is neither done nor failed.
		r.release([]store.InternalEvent{ev})
		return ctx.Err()
	}
	if pubErr == nil {
		return nil
	}
	// Record the failure even if a stop cancels ctx now: the delivery has happened.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeoutDefault)
	defer cancel()
	res, err := r.st.Internal().IncrementRetry(ctx, ev.Lease(), pubErr.Error(), r.cfg.RetryDelay)
	if err != nil {
		return fmt.Errorf("relay: record failure of %s (%v): %w", ev.ID, pubErr, err)
	}
	r.log.Warn("relay: delivery failed", slog.String("event", ev.ID), slog.String("type", ev.EventType),
		slog.String("record", ev.ObjectType+"/"+ev.RecordID), slog.Bool("dead", res.Dead), slog.Any("error", pubErr))
	return fmt.Errorf("relay: deliver %s: %w", ev.ID, pubErr)
}

// release returns leased events to pending at once, unless the relay crashed.
func (r *Relay) release(evs []store.InternalEvent) {
	if len(evs) == 0 || r.crashed() {
		return
	}
	leases := make([]store.Lease, len(evs))
	for i, ev := range evs {
		leases[i] = ev.Lease()
	}
	ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeoutDefault)
	defer cancel()
	if err := r.st.Internal().Release(ctx, 0, leases...); err != nil {
		r.log.Warn("relay: release", slog.Int("events", len(leases)), slog.Any("error", err))
	}
}
