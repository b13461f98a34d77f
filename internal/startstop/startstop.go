// Package startstop is the lifecycle the background services share (the
// SyncWorker, the outbound worker): Start runs one loop and returns at once,
// Stop asks it to finish the cycle in flight, and a Stop whose context ends
// first turns into a hard stop that cancels the loop's context.
package startstop

import (
	"context"
	"errors"
	"sync"
)

var (
	// ErrStarted is returned by Start on a running service.
	ErrStarted = errors.New("startstop: already started")
	// ErrStopped is returned by Start on a stopped service: it cannot start again.
	ErrStopped = errors.New("startstop: stopped; create a new service to start again")
)

// Service runs one background loop. The zero value is ready to use.
type Service struct {
	mu      sync.Mutex
	started bool
	stopped bool
	stop    chan struct{}      // closed by Stop: finish the cycle, start no other
	cancel  context.CancelFunc // cancels the loop's context: the hard stop
	done    chan struct{}      // closed when the loop has returned
}

// Start runs run in a goroutine and returns at once. run's context ends when
// ctx does or on a hard stop; stop is closed when a graceful stop is asked for.
func (s *Service) Start(ctx context.Context, run func(ctx context.Context, stop <-chan struct{})) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return ErrStopped
	}
	if s.started {
		return ErrStarted
	}
	s.started = true
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel, s.stop, s.done = cancel, make(chan struct{}), make(chan struct{})
	go func() {
		defer close(s.done)
		run(runCtx, s.stop)
	}()
	return nil
}

// Stop asks the loop to finish its cycle and waits for it. If ctx ends first,
// the loop's context is cancelled and Stop returns ctx's error once the loop
// has returned. Stop is idempotent; before Start it only prevents a later Start.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		s.stopped = true
		s.mu.Unlock()
		return nil
	}
	if !s.stopped {
		s.stopped = true
		close(s.stop)
	}
	done, cancel := s.done, s.cancel
	s.mu.Unlock()
	select {
	case <-done:
		cancel()
		return nil
	case <-ctx.Done():
		cancel()
		<-done
		return ctx.Err()
	}
}

// Done is closed when a started loop has returned; nil before Start.
func (s *Service) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.done
}
