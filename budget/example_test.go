package budget_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/budget"
)

// A worker reserves the calls of its batch before making them; refused, it
// releases the batch for RetryAfter instead of failing it.
func Example() {
	now := time.Date(2025, 3, 4, 12, 0, 0, 0, time.UTC)
	b, err := budget.NewMemory(budget.Config{Limit: 100, Window: 10 * time.Second, Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	key := "portal:12345:private-app:primary"

	r, _ := b.Reserve(ctx, key, 60)
	fmt.Println("60 calls granted:", r.Granted)
	r, _ = b.Reserve(ctx, key, 60)
	fmt.Println("60 more granted:", r.Granted, "retry after", r.RetryAfter)

	// HubSpot answered 429: every worker sharing the budget pauses.
	now = now.Add(time.Second)
	_ = b.Observe(ctx, key, budget.Observation{RateLimited: true, Policy: budget.PolicyTenSecondlyRolling})
	r, _ = b.Reserve(ctx, key, 1)
	fmt.Println("after a 429 granted:", r.Granted, "retry after", r.RetryAfter)
	// Output:
	// 60 calls granted: true
	// 60 more granted: false retry after 10.1s
	// after a 429 granted: false retry after 9.1s
}
