// Package startstop is the one lifecycle every background service of hubsync
// shares (inbound.Worker, outbound.Worker, relay.Relay, the server's cleaner
// and server.Server itself), modelled on River's startstop:
//
//   - Start runs the loop in a goroutine and returns at once. A second Start
//     returns ErrStarted; a Start after Stop returns ErrStopped (a service
//     runs once, also when its loop returned on its own; create a new one to
//     run again).
//   - Stop is the graceful stop: it closes the loop's stop channel (finish the
//     cycle in flight, start no other) and waits for the loop to return.
//   - A Stop whose context ends first turns into the hard stop: the loop's
//     context is cancelled (in-flight work is released, not failed) and Stop
//     returns the context's error once the loop has returned. Cancelling
//     Start's context is a hard stop too.
//   - Stop is idempotent, and safe before Start (a later Start then returns
//     ErrStopped).
//   - Done is closed once the service has stopped, whether it ran or not.
//
// The public packages re-export ErrStarted and ErrStopped (inbound.ErrStarted
// is startstop.ErrStarted, and so on), so errors.Is works across all of them.
package startstop

import (
	"context"
	"errors"
	"sync"
)

var (
	// ErrStarted is returned by Start on a running service.
	ErrStarted = errors.New("hubsync: service already started")
	// ErrStopped is returned by Start on a stopped service: it cannot start again.
	ErrStopped = errors.New("hubsync: service stopped; create a new one to start again")
)

// Service runs one background loop. The zero value is ready to use.
type Service struct {
	mu      sync.Mutex
	started bool
	stopped bool               // Stop was called, or the loop returned on its own
	stop    chan struct{}      // closed by Stop: finish the cycle, start no other
	cancel  context.CancelFunc // cancels the loop's context: the hard stop
	done    chan struct{}      // closed when the loop has returned (or Stop came first)
}

// CanStart reports what Start would answer, without starting: nil, ErrStarted
// or ErrStopped. Services whose Start prepares expensive things first (the
// server opens a database) check it before they do.
func (s *Service) CanStart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.canStart()
}

func (s *Service) canStart() error {
	switch {
	case s.stopped:
		return ErrStopped
	case s.started:
		return ErrStarted
	}
	return nil
}

// doneChan returns the done channel, creating it. Called with s.mu held.
func (s *Service) doneChan() chan struct{} {
	if s.done == nil {
		s.done = make(chan struct{})
	}
	return s.done
}

// Start runs run in a goroutine and returns at once. run's context ends when
// ctx does or on a hard stop; stop is closed when a graceful stop is asked for.
func (s *Service) Start(ctx context.Context, run func(ctx context.Context, stop <-chan struct{})) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.canStart(); err != nil {
		return err
	}
	s.started = true
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel, s.stop = cancel, make(chan struct{})
	done := s.doneChan()
	go func() {
		defer close(done)
		run(runCtx, s.stop)
		s.mu.Lock()
		s.stopped = true // a loop that returned on its own (its ctx ended) is stopped too
		s.mu.Unlock()
	}()
	return nil
}

// Stop asks the loop to finish its cycle and waits for it. If ctx ends first,
// the loop's context is cancelled and Stop returns ctx's error once the loop
// has returned. Stop is idempotent; before Start it only prevents a later Start.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.started {
		if !s.stopped {
			s.stopped = true
			close(s.doneChan())
		}
		s.mu.Unlock()
		return nil
	}
	select {
	case <-s.stop:
	default:
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

// Done is closed once the service has stopped: its loop has returned, or Stop
// came before any Start.
func (s *Service) Done() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.doneChan()
}

// Wait blocks until Done is closed.
func (s *Service) Wait() { <-s.Done() }
