package budget

import (
	"context"
	"fmt"
	"time"
)

// Usage is what the shared budget has recorded for one key, for operators.
type Usage struct {
	Key string `json:"key"`
	// CallsToday counts the calls granted since the day began: midnight in
	// the HubSpot account's time zone, TimeZone, as the replicas recorded it.
	CallsToday int64 `json:"calls_today"`
	// DayEnds is when today's count resets (nil before any call).
	DayEnds *time.Time `json:"day_ends,omitempty"`
	// TimeZone names the account's zone as a replica that knew it recorded it
	// ("" when none did: days are UTC days).
	TimeZone string `json:"time_zone,omitempty"`
	// PausedUntil is set while the key is paused after a 429.
	PausedUntil *time.Time `json:"paused_until,omitempty"`
}

// Usage reads every key's use of the budget, by key, without changing it:
// today's call count (by Config.Now; the day's end is in the row, so no zone
// is needed to read it) and any pause in force.
func (b *SQL) Usage(ctx context.Context) ([]Usage, error) {
	rows, err := b.db.QueryContext(ctx, b.q.usage)
	if err != nil {
		return nil, fmt.Errorf("read budget use: %w", err)
	}
	defer rows.Close()
	now := b.cfg.Now().UnixMicro()
	out := []Usage{}
	for rows.Next() {
		var u Usage
		var day, count, paused, dayEnd int64
		if err := rows.Scan(&u.Key, &day, &count, &paused, &dayEnd, &u.TimeZone); err != nil {
			return nil, fmt.Errorf("read budget use: %w", err)
		}
		if end, legacy := legacyDayEnd(day, dayEnd); legacy { // counted by an older version: a UTC day
			dayEnd, u.TimeZone = end, ""
		}
		if now < dayEnd {
			u.CallsToday = count
			t := time.UnixMicro(dayEnd).UTC()
			u.DayEnds = &t
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
