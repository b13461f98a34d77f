package startstop

import (
	"context"
	"errors"
	"github.com/hubsync/hubsync/internal/testwait"
	"testing"
)

func TestGracefulStopLetsTheCycleFinish(t *testing.T) {
	var s Service
	finished := make(chan bool, 1)
	running := make(chan struct{})
	err := s.Start(context.Background(), func(ctx context.Context, stop <-chan struct{}) {
		close(running)
		<-stop
		finished <- ctx.Err() == nil // the cycle ends on its own, not cancelled
	})
	if err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the loop to run", running)
	if err := s.Start(context.Background(), nil); !errors.Is(err, ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !testwait.Recv(t, "the cycle to finish", finished) {
		t.Fatal("a graceful stop cancelled the loop's context")
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop = %v, want nil", err)
	}
	if err := s.Start(context.Background(), nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestStopWithEndedContextCancelsTheLoop(t *testing.T) {
	var s Service
	running := make(chan struct{})
	if err := s.Start(context.Background(), func(ctx context.Context, stop <-chan struct{}) {
		close(running)
		<-ctx.Done() // ignores stop: only a hard stop ends it
	}); err != nil {
		t.Fatal(err)
	}
	testwait.Recv(t, "the loop to run", running)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Stop(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Stop with an ended context = %v, want context.Canceled", err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Stop returned before the loop did")
	}
}

func TestStopBeforeStart(t *testing.T) {
	var s Service
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	default:
		t.Fatal("Done not closed by a Stop before Start")
	}
	if err := s.CanStart(); !errors.Is(err, ErrStopped) {
		t.Fatalf("CanStart after Stop = %v, want ErrStopped", err)
	}
	if err := s.Start(context.Background(), func(context.Context, <-chan struct{}) {}); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestALoopThatReturnedIsStopped(t *testing.T) {
	var s Service
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.Start(ctx, func(ctx context.Context, _ <-chan struct{}) { <-ctx.Done() }); err != nil {
		t.Fatal(err)
	}
	cancel() // a hard stop through Start's context
	testwait.Recv(t, "the service to stop", s.Done())
	if err := s.Start(context.Background(), nil); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after the loop returned = %v, want ErrStopped", err)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("Stop after the loop returned = %v", err)
	}
}
