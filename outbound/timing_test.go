package outbound_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/store"
)

// phases sums the latency of the worker's dependencies by operation, for the
// benchmark's report of where a cycle's time goes.
type phases struct {
	mu    sync.Mutex
	n     map[string]int
	sum   map[string]time.Duration
	calls []time.Time // when each HubSpot write call started, for windowFill
}

func newPhases() *phases { return &phases{n: map[string]int{}, sum: map[string]time.Duration{}} }

func (p *phases) since(op string, start time.Time) {
	d := time.Since(start)
	p.mu.Lock()
	p.n[op]++
	p.sum[op] += d
	p.mu.Unlock()
}

func (p *phases) reset() {
	p.mu.Lock()
	clear(p.n)
	clear(p.sum)
	p.mu.Unlock()
}

// windowFill returns the calls started in each window of length window that
// ends at from+window, from+window+step, … up to to, in order: how full
// HubSpot's rolling window was, seen from its end.
func (p *phases) windowFill(from, to time.Time, window, step time.Duration) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var fill []int
	for end := from.Add(window); !end.After(to); end = end.Add(step) {
		n := 0
		for _, at := range p.calls {
			if at.After(end.Add(-window)) && !at.After(end) {
				n++
			}
		}
		fill = append(fill, n)
	}
	return fill
}

func (p *phases) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	ops := make([]string, 0, len(p.n))
	for op := range p.n {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	for _, op := range ops {
		fmt.Fprintf(&b, "  %-22s %6d calls, mean %8s\n", op, p.n[op], (p.sum[op] / time.Duration(p.n[op])).Round(100*time.Microsecond))
	}
	return b.String()
}

type timedRepo struct {
	store.OutboundRepository
	p *phases
}

func (r timedRepo) Claim(ctx context.Context, cp store.ClaimParams) ([]store.OutboundEvent, error) {
	defer r.p.since("store.Claim", time.Now())
	return r.OutboundRepository.Claim(ctx, cp)
}

func (r timedRepo) Complete(ctx context.Context, leases ...store.Lease) error {
	defer r.p.since("store.Complete", time.Now())
	return r.OutboundRepository.Complete(ctx, leases...)
}

func (r timedRepo) Release(ctx context.Context, delay time.Duration, leases ...store.Lease) error {
	defer r.p.since("store.Release", time.Now())
	return r.OutboundRepository.Release(ctx, delay, leases...)
}

type timedHubSpot struct {
	*hubspot.Client
	p *phases
}

func (h timedHubSpot) BatchUpsert(ctx context.Context, t hubspot.ObjectType, in []hubspot.UpsertInput) (*hubspot.BatchResult, error) {
	start := time.Now()
	h.p.mu.Lock()
	h.p.calls = append(h.p.calls, start)
	h.p.mu.Unlock()
	defer h.p.since("hubspot.BatchUpsert", start)
	return h.Client.BatchUpsert(ctx, t, in)
}

type timedLinks struct {
	*links.Links
	p *phases
}

func (l timedLinks) LookupMany(ctx context.Context, destination, objectType string, ids []string) (map[string]string, error) {
	defer l.p.since("links.LookupMany", time.Now())
	return l.Links.LookupMany(ctx, destination, objectType, ids)
}

func (l timedLinks) LookupPushedMany(ctx context.Context, destination, objectType string, ids []string) (map[string]links.Pushed, error) {
	defer l.p.since("links.LookupPushedMany", time.Now())
	return l.Links.LookupPushedMany(ctx, destination, objectType, ids)
}

func (l timedLinks) LookupOwedMany(ctx context.Context, destination, objectType string, ids []string) (map[string][]string, error) {
	defer l.p.since("links.LookupOwedMany", time.Now())
	return l.Links.LookupOwedMany(ctx, destination, objectType, ids)
}

func (l timedLinks) PushedMany(ctx context.Context, destination, objectType string, states []links.Pushed) error {
	defer l.p.since("links.PushedMany", time.Now())
	return l.Links.PushedMany(ctx, destination, objectType, states)
}

func (l timedLinks) LinkMany(ctx context.Context, destination, objectType string, pairs map[string]string) error {
	defer l.p.since("links.LinkMany", time.Now())
	return l.Links.LinkMany(ctx, destination, objectType, pairs)
}

type timedBudget struct {
	budget.Budget
	p *phases
}

func (b timedBudget) Reserve(ctx context.Context, key string, tokens int) (budget.Reservation, error) {
	defer b.p.since("budget.Reserve", time.Now())
	return b.Budget.Reserve(ctx, key, tokens)
}

// Schedule books ahead when the wrapped budget can (budget.Scheduler), as
// the worker would without the wrapper.
func (b timedBudget) Schedule(ctx context.Context, key string, tokens int, within time.Duration) (budget.Reservation, error) {
	defer b.p.since("budget.Schedule", time.Now())
	if s, ok := b.Budget.(budget.Scheduler); ok {
		return s.Schedule(ctx, key, tokens, within)
	}
	return b.Budget.Reserve(ctx, key, tokens)
}

func (b timedBudget) Paused(ctx context.Context, key string) (time.Duration, error) {
	defer b.p.since("budget.Paused", time.Now())
	if s, ok := b.Budget.(budget.Scheduler); ok {
		return s.Paused(ctx, key)
	}
	return 0, nil
}

func (b timedBudget) Observe(ctx context.Context, key string, o budget.Observation) error {
	defer b.p.since("budget.Observe", time.Now())
	return b.Budget.Observe(ctx, key, o)
}
