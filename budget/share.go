package budget

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// ShareDefault is the share of the budget a background consumer such as the
// drift scan may use by default: at most a fifth of each window, so that the
// sync's own calls always find room.
const ShareDefault = 0.2

// Share caps one consumer's use of a shared budget key: every reservation is
// first taken from the consumer's own key in Cap (a budget whose Limit is the
// share, see ShareLimit), then from the shared budget. The consumer never
// uses more than its share of a window, and what it uses counts against the
// shared key like any other call. Tokens granted by Cap but refused by the
// shared budget stay spent in Cap (the consumer waits a little longer,
// never the sync).
type Share struct {
	// Shared is the budget every HubSpot caller reserves from.
	Shared Budget
	// Cap holds the consumer's own allowance per window.
	Cap Budget
	// CapKey is the consumer's key in Cap, e.g. "hubspot:drift".
	CapKey string
}

var _ Budget = (*Share)(nil)

// ShareLimit returns the calls per window of a share of limit: the share
// rounded down, at least 1. share must lie in (0, 1].
func ShareLimit(limit int, share float64) (int, error) {
	if !(share > 0 && share <= 1) {
		return 0, fmt.Errorf("budget: share %v must be above 0 and at most 1 (e.g. 0.2 for a fifth)", share)
	}
	return max(1, int(math.Floor(float64(limit)*share+1e-9))), nil
}

// Reserve takes tokens from the consumer's share, then from key's shared
// budget; it is refused, with the later RetryAfter, when either refuses.
func (s *Share) Reserve(ctx context.Context, key string, tokens int) (Reservation, error) {
	if s.Shared == nil || s.Cap == nil || s.CapKey == "" {
		return Reservation{}, errors.New("budget: Share needs Shared, Cap and CapKey")
	}
	res, err := s.Cap.Reserve(ctx, s.CapKey, tokens)
	if err != nil || !res.Granted {
		return res, err
	}
	return s.Shared.Reserve(ctx, key, tokens)
}

// Observe feeds the shared budget.
func (s *Share) Observe(ctx context.Context, key string, o Observation) error {
	return s.Shared.Observe(ctx, key, o)
}
