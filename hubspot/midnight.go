package hubspot

import "time"

// NextMidnight is the instant after t at which the next day begins in zone
// (nil: UTC): when HubSpot resets the daily limit of an account in zone. Where
// clocks spring forward at midnight (America/Santiago, Atlantic/Azores, …)
// the day begins at the transition, the first instant of its date.
func NextMidnight(t time.Time, zone *time.Location) time.Time {
	if zone == nil {
		zone = time.UTC
	}
	y, m, d := t.In(zone).Date()
	next := time.Date(y, m, d+1, 0, 0, 0, 0, zone)
	ny, nm, nd := time.Date(y, m, d+1, 12, 0, 0, 0, time.UTC).Date() // the next date, normalised
	if sameDate(next.In(zone), ny, nm, nd) && next.After(t) {
		return next
	}
	// Midnight does not exist on that date: time.Date landed before it (on
	// the old date). Find the first instant of the next date; transitions
	// are at most a few hours.
	lo, hi := next, next.Add(6*time.Hour)
	if !lo.After(t) {
		lo = t
	}
	for hi.Sub(lo) > time.Microsecond {
		mid := lo.Add(hi.Sub(lo) / 2)
		if dateAfter(mid.In(zone), y, m, d) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi.Truncate(time.Microsecond)
}

func sameDate(t time.Time, y int, m time.Month, d int) bool {
	ty, tm, td := t.Date()
	return ty == y && tm == m && td == d
}

// dateAfter reports whether t's date is after y-m-d.
func dateAfter(t time.Time, y int, m time.Month, d int) bool {
	ty, tm, td := t.Date()
	return ty > y || (ty == y && (tm > m || (tm == m && td > d)))
}
