package budget

import (
	"context"
	"fmt"
	"time"
)

// Usage is what the shared budget has recorded for one key, for operators.
type Usage struct {
	Key string `json:"key"`
	// CallsToday counts the calls granted since midnight (Config.TimeZone).
	CallsToday int64 `json:"calls_today"`
	// PausedUntil is set while the key is paused after a 429.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

// Usage reads every key's use of the budget, by key, without changing it:
// today's call count (by Config.Now) and any pause in force.
func (b *SQL) Usage(ctx context.Context) ([]Usage, error) {
	rows, err := b.db.QueryContext(ctx, b.q.usage)
	if err != nil {
		return nil, fmt.Errorf("read budget use: %w", err)
	}
	defer rows.Close()
	now := b.cfg.Now().UnixMicro()
	today := limits{zone: b.cfg.TimeZone}.dayOf(now)
	out := []Usage{}
	for rows.Next() {
		var u Usage
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
