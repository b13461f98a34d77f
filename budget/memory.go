package budget

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Memory is a Budget held in one process: correct for a single replica, and the
// reference for the shared SQL budget, which keeps the same state in a row.
type Memory struct {
	cfg  Config
	mu   sync.Mutex
	keys map[string]*state
}

var _ Scheduler = (*Memory)(nil)

// NewMemory returns an in-process budget.
func NewMemory(cfg Config) (*Memory, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Memory{cfg: cfg, keys: make(map[string]*state)}, nil
}

func (m *Memory) get(key string) *state {
	s := m.keys[key]
	if s == nil {
		s = &state{}
		m.keys[key] = s
	}
	return s
}

// Reserve takes tokens from key's budget, or refuses with the time until enough
// frees up. It fails with ErrTooManyTokens when tokens exceed key's limit.
func (m *Memory) Reserve(_ context.Context, key string, tokens int) (Reservation, error) {
	l, err := m.cfg.limitsFor(key, tokens)
	if err != nil {
		return Reservation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// The clock is read under the lock so grants are recorded in time order.
	return m.get(key).reserve(l, m.cfg.Now().UnixMicro(), int64(tokens)), nil
}

// Schedule books tokens from key's budget for the earliest moment within
// within from now at which they fit; see Scheduler.
func (m *Memory) Schedule(_ context.Context, key string, tokens int, within time.Duration) (Reservation, error) {
	l, err := m.cfg.limitsFor(key, tokens)
	if err != nil {
		return Reservation{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.get(key).schedule(l, m.cfg.Now().UnixMicro(), int64(tokens), l.ahead(within)), nil
}

// Observe calibrates key's budget from a HubSpot answer; see (*SQL).Observe.
func (m *Memory) Observe(_ context.Context, key string, o Observation) error {
	l, err := m.cfg.limitsFor(key, 1)
	if err != nil {
		return fmt.Errorf("budget: observe: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.get(key).observe(l, m.cfg.Now().UnixMicro(), o)
	return nil
}

// Paused returns how long key stays paused from now; see Scheduler.
func (m *Memory) Paused(_ context.Context, key string) (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.keys[key]
	if s == nil {
		return 0, nil
	}
	return pausedFor(s.pausedUntil, m.cfg.Now().UnixMicro()), nil
}
