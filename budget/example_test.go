package budget_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/budget"
)

// A worker reserves its calls right before making them, and starts them by
// UseBy; refused, it releases the batch for RetryAfter instead of failing it.
// Each grant is counted for Window + CallLead (200 ms by default), so a call
// started by UseBy is counted for the whole window in which HubSpot counts it.
func Example() {
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	// No random spread of RetryAfter, so that the output is exact.
	b, err := budget.NewMemory(budget.Config{Limit: 100, Window: 10 * time.Second, RetrySpread: -1, Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	key := "portal:12345:private-app:primary"

	r, _ := b.Reserve(ctx, key, 60)
	fmt.Println("60 calls granted:", r.Granted, "start them by", r.UseBy.Sub(now))
	r, _ = b.Reserve(ctx, key, 60)
	fmt.Println("60 more granted:", r.Granted, "retry after", r.RetryAfter)

	// HubSpot answered 429: every worker sharing the budget pauses.
	now = now.Add(time.Second)
	_ = b.Observe(ctx, key, budget.Observation{RateLimited: true, Policy: budget.PolicyTenSecondlyRolling})
	r, _ = b.Reserve(ctx, key, 1)
	fmt.Println("after a 429 granted:", r.Granted, "retry after", r.RetryAfter)
	// Output:
	// 60 calls granted: true start them by 300ms
	// 60 more granted: false retry after 10.3s
	// after a 429 granted: false retry after 9.3s
}
