package server

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/hubsync/hubsync/store"
)

//go:embed sql/budget_usage.sql
var budgetUsageSQL string

// BudgetUsage is what the shared HubSpot call budget (package budget's SQL
// budget) has recorded for one key.
type BudgetUsage struct {
	Key string `json:"key"`
	// CallsToday counts the calls granted since midnight UTC.
	CallsToday int64 `json:"calls_today"`
	// PausedUntil is set while the key is paused after a 429.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// LoadBudgetUsage reads the budget rows of the shared database. It reads the
// budget table directly, read-only: package budget offers no usage query.
func LoadBudgetUsage(ctx context.Context, st store.Store) ([]BudgetUsage, error) {
	rows, err := st.DB().QueryContext(ctx, budgetUsageSQL)
	if err != nil {
		return nil, fmt.Errorf("read budget use: %w", err)
	}
	defer rows.Close()
	now := st.Now().UnixMicro()
	today := now / dayMicros
	out := []BudgetUsage{}
	for rows.Next() {
		var u BudgetUsage
		var day, count, paused int64
		if err := rows.Scan(&u.Key, &day, &count, &paused); err != nil {
			return nil, fmt.Errorf("read budget use: %w", err)
		}
		if day == today {
			u.CallsToday = count
		}
		if paused > now {
			t := time.UnixMicro(paused).UTC()
			u.PausedUntil = &t
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read budget use: %w", err)
	}
	return out, nil
}
