package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/hubsync/hubsync/budget"
)

func TestShareCapsTheConsumer(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	shared, err := budget.NewMemory(budget.Config{Limit: 100, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	n, err := budget.ShareLimit(100, budget.ShareDefault)
	if err != nil || n != 20 {
		t.Fatalf("ShareLimit(100, 0.2) = %d, %v; want 20", n, err)
	}
	capB, err := budget.NewMemory(budget.Config{Limit: n, DailyLimit: -1, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	s := &budget.Share{Shared: shared, Cap: capB, CapKey: "hubspot:drift"}
	ctx := context.Background()
	granted := 0
	for range 50 {
		res, err := s.Reserve(ctx, "hubspot", 1)
		if err != nil {
			t.Fatal(err)
		}
		if res.Granted {
			granted++
		} else if res.RetryAfter <= 0 {
			t.Fatalf("refused without a RetryAfter")
		}
	}
	if granted != 20 {
		t.Fatalf("the consumer got %d calls in one window; want its share, 20", granted)
	}
	// The sync still has the other 80 of the shared window.
	for i := range 80 {
		res, err := shared.Reserve(ctx, "hubspot", 1)
		if err != nil || !res.Granted {
			t.Fatalf("sync call %d refused (%v): the share took more than 20", i, err)
		}
	}
	if res, _ := shared.Reserve(ctx, "hubspot", 1); res.Granted {
		t.Fatal("the shared window holds more than 100 calls")
	}
	// A window later the share is free again.
	now = now.Add(11 * time.Second)
	if res, err := s.Reserve(ctx, "hubspot", 1); err != nil || !res.Granted {
		t.Fatalf("share not refilled after a window: %+v %v", res, err)
	}
}

func TestShareLimitRejectsBadShares(t *testing.T) {
	for _, v := range []float64{0, -0.1, 1.5} {
		if _, err := budget.ShareLimit(100, v); err == nil {
			t.Errorf("ShareLimit(100, %v) accepted", v)
		}
	}
	if n, _ := budget.ShareLimit(3, 0.2); n != 1 {
		t.Errorf("ShareLimit(3, 0.2) = %d; want at least 1", n)
	}
}
