package relay

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/hubsync/hubsync/store"
)

// Handler handles one internal event. It must be idempotent: an event can be
// delivered more than once.
type Handler func(ctx context.Context, ev store.InternalEvent) error

// ErrDuplicateSubscriber is returned by Subscribe for a name already subscribed.
var ErrDuplicateSubscriber = errors.New("relay: subscriber name already used")

// Bus is an in-process event bus. Subscribers are called in the order they
// subscribed. It is safe for concurrent use.
type Bus struct {
	mu   sync.RWMutex
	subs []subscriber
}

type subscriber struct {
	name string
	h    Handler
}

// NewBus returns an empty bus.
func NewBus() *Bus { return &Bus{} }

// Subscribe adds a handler under a unique name (used in errors and logs).
func (b *Bus) Subscribe(name string, h Handler) error {
	if name == "" || h == nil {
		return errors.New("relay: Subscribe needs a name and a handler")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.subs {
		if s.name == name {
			return fmt.Errorf("%w: %q", ErrDuplicateSubscriber, name)
		}
	}
	b.subs = append(b.subs, subscriber{name: name, h: h})
	return nil
}

// Unsubscribe removes the handler named name; it reports whether there was one.
func (b *Bus) Unsubscribe(name string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, s := range b.subs {
		if s.name == name {
			b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
			return true
		}
	}
	return false
}

// Publish calls every subscriber with ev, in subscription order, and returns the
// errors of those that failed, joined. Every subscriber is called even when an
// earlier one fails; a panicking subscriber counts as failed.
func (b *Bus) Publish(ctx context.Context, ev store.InternalEvent) error {
	b.mu.RLock()
	subs := b.subs
	b.mu.RUnlock()
	var errs []error
	for _, s := range subs {
		if err := call(ctx, s, ev); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func call(ctx context.Context, s subscriber, ev store.InternalEvent) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("subscriber %s panicked on %s %s: %v", s.name, ev.EventType, ev.ID, p)
		}
	}()
	if err := s.h(ctx, ev); err != nil {
		return fmt.Errorf("subscriber %s: %w", s.name, err)
	}
	return nil
}
