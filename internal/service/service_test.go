package service

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
)

func TestNewBaseFillsDefaultsAndKeepsWhatIsSet(t *testing.T) {
	b := NewBase("inbound", Base{})
	if b.Logger == nil || b.Now == nil || !strings.Contains(b.Owner, "/inbound-") {
		t.Fatalf("defaults not filled: %+v", b)
	}
	if a, c := OwnerDefault("x"), OwnerDefault("x"); a == c {
		t.Fatalf("two default owners are equal: %q", a)
	}
	if o, p := OwnerDefault("x"), OwnerPrefix(os.Getpid()); !strings.HasPrefix(o, p) || strings.HasPrefix(o, OwnerPrefix(os.Getpid()+1)) {
		t.Fatalf("OwnerDefault %q does not start with this process's OwnerPrefix %q alone", o, p)
	}
	at := time.Unix(42, 0)
	log := slog.New(slog.DiscardHandler)
	b = NewBase("inbound", Base{Logger: log, Now: func() time.Time { return at }, Owner: "me"})
	if b.Logger != log || !b.Now().Equal(at) || b.Owner != "me" {
		t.Fatalf("set fields replaced: %+v", b)
	}
}

func TestIdle(t *testing.T) {
	ctx := context.Background()
	if !Idle(ctx, nil, nil, time.Millisecond) {
		t.Fatal("Idle stopped on its timer; want true")
	}
	notify := make(chan struct{}, 1)
	notify <- struct{}{}
	if !Idle(ctx, nil, notify, time.Hour) {
		t.Fatal("Idle woken by notify returned false")
	}
	stop := make(chan struct{})
	close(stop)
	if Idle(ctx, stop, nil, time.Hour) {
		t.Fatal("Idle after stop returned true")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if Idle(cctx, nil, nil, time.Hour) {
		t.Fatal("Idle after the context ended returned true")
	}
}
