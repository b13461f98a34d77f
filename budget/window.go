package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// bucketsPerWindow is how finely a window is cut. Grants are counted per bucket
// (100 ms for a 10 s window), so a refused caller may be told to wait up to one
// bucket longer than an exact sliding log would say, never shorter, and a
// grant is counted for up to one bucket longer than Window + CallLead. That
// bucket is also slack for a call that reaches HubSpot later than it started:
// with 10 ms buckets a chaos run at load 10 met a real 429, as booked calls
// take freed room at the instant it frees (BENCHMARKS.md, fifth session).
const bucketsPerWindow = 100

// bucketsPerSlice is how many buckets make the 1% slice of a window that
// Config.Pace caps.
const bucketsPerSlice = bucketsPerWindow / 100

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// limits are the numbers one key is held to, in microseconds.
type limits struct {
	limit  int64          // tokens per window
	window int64          // window length
	lead   int64          // how long after a grant its calls may start
	spread int64          // a refusal's RetryAfter gets a random extra of [0, spread)
	burst  int64          // most tokens booked in one slice of bucketsPerSlice buckets (unless it is empty); 0 for no cap
	width  int64          // bucket width
	n      int64          // buckets a grant is counted for, n*width >= window+lead
	nw     int64          // buckets an answered call is counted for after its answer's, nw*width >= window
	daily  int64          // tokens per day of zone; <= 0 means none
	zone   *time.Location // the account's time zone, whose midnight starts a day; nil: unknown (the row's, else UTC)
}

// zoneCache holds the zones loaded by name from budget rows.
var zoneCache sync.Map // name → *time.Location

// dayEndAfter is the instant (µs) at which the day holding now (µs) ends:
// the next midnight in the key's zone, l.zone, or when that is unknown the
// zone named by the row (rowZone, written by a replica that knew it), else
// UTC.
func (l limits) dayEndAfter(now int64, rowZone string) int64 {
	zone := l.zone
	if zone == nil && rowZone != "" {
		if z, ok := zoneCache.Load(rowZone); ok {
			zone = z.(*time.Location)
		} else if z, err := time.LoadLocation(rowZone); err == nil {
			zoneCache.Store(rowZone, z)
			zone = z
		}
	}
	return hubspot.NextMidnight(time.UnixMicro(now), zone).UnixMicro()
}

// fromLegacyDay reads a row's day written by a version before DayEndMicros,
// which counted UTC days in DayNumber: the row is from before the column
// (DayEndMicros 0), or such a replica began a later UTC day than the stored
// day's end (during a rolling upgrade). The day is then that UTC day, begun
// in no zone (a replica that knows the account's zone ends it sooner, see
// advance), and its count is kept.
func (s *state) fromLegacyDay(day int64) {
	if end, legacy := legacyDayEnd(day, s.dayEnd); legacy {
		s.dayEnd, s.zone = end, ""
	}
}

// legacyDayEnd returns the end of UTC day day, and true, when the row's
// DayNumber day says an older version began it (see fromLegacyDay).
func legacyDayEnd(day, dayEnd int64) (int64, bool) {
	if day > 0 && (dayEnd == 0 || day > floorDiv(dayEnd-1, dayMicros)) {
		return (day + 1) * dayMicros, true
	}
	return dayEnd, false
}

// legacyDayNumber is the DayNumber a row is written with, for versions before
// DayEndMicros: the UTC day of the latest clock, as they count days.
func (s *state) legacyDayNumber() int64 { return floorDiv(s.clock, dayMicros) }

func newLimits(limit int, window time.Duration, daily int) limits {
	return newPacedLimits(limit, window, daily, 0, 0, -1)
}

// newPacedLimits is newLimits for a budget whose grants may be used up to
// lead after they are made (each grant is counted for window+lead, so a call
// made by then still leaves HubSpot's window before the budget forgets it),
// and whose 1% slices get at most pace times their even share of the limit
// (pace <= 0: no cap).
func newPacedLimits(limit int, window time.Duration, daily int, lead, spread time.Duration, pace int) limits {
	w := window.Microseconds()
	width := max(w/bucketsPerWindow, 1)
	ld := max(lead.Microseconds(), 0)
	var burst int64
	if pace > 0 {
		burst = (int64(pace)*int64(limit) + 99) / 100
	}
	return limits{limit: int64(limit), window: w, lead: ld, spread: max(spread.Microseconds(), 0),
		width: width, n: (w + ld + width - 1) / width, nw: (w + width - 1) / width, daily: int64(daily), burst: burst}
}

// state is what a budget keeps per key; the memory budget holds it in a map, the
// SQL budget in a row. It is a sliding window of per-bucket grant counts.
//
// Why it never over-grants: a grant counted in bucket b may be used (its calls
// started) from the start of b (for a grant booked ahead, once its Wait is
// over) until its UseBy, (b+n+1)*width - window, and it is counted in
// buckets b … b+n, so until (b+n+1)*width. Let W(c) be the tokens counted in buckets c-n … c. A
// call started at time a, in bucket c_a, was granted in a bucket b <= c_a with
// a <= UseBy, so it is counted in every bucket from c_a to the bucket of
// a+window: for any t, W(bucket of t) counts every call started in
// (t-window, t]. A grant in bucket x is made only when W(c) + tokens <= limit
// for every c in x … x+n, the buckets it is counted in (later buckets may hold
// grants booked ahead), so after it no W exceeds the limit, and no
// half-open interval of length window holds more calls than the limit,
// counting each call at the moment it starts.
type state struct {
	width       int64   // bucket width the counts were recorded with; 0 for a new key
	head        int64   // bucket index of counts[len(counts)-1]: the current bucket, or a later one holding grants booked ahead
	counts      []int64 // counts[i] is the tokens granted in bucket head-len(counts)+1+i
	clock       int64   // latest clock reading recorded (µs); time never runs backwards
	dayEnd      int64   // µs; when the day dayCount counts ends (0: no day yet)
	dayCount    int64
	zone        string // the account's time zone as a replica that knew it recorded it ("" unknown)
	pausedUntil int64  // µs; no grants before this
	shortAt     int64  // µs; when the budget last refused, booked a grant ahead for want of room, or a caller noted it short (0: never)
}

// shortSaveEvery is how much later than the recorded shortAt a refusal must
// come to be written: a saturated budget refuses many cycles a second, and a
// refusal otherwise writes nothing.
const shortSaveEvery = int64(time.Second / time.Microsecond)

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// first is the bucket index of counts[0].
func (s *state) first() int64 { return s.head - int64(len(s.counts)) + 1 }

// at returns the tokens counted in bucket b (0 outside what is kept).
func (s *state) at(b int64) int64 {
	if i := b - s.first(); i >= 0 && i < int64(len(s.counts)) {
		return s.counts[i]
	}
	return 0
}

// advance moves the window to now (µs) and returns the effective time: now, or
// the latest time already recorded if now is earlier (a replica whose clock is
// behind). Afterwards counts covers the buckets cur-n … max(cur, head), where
// cur is the effective time's bucket: everything still counted now or later.
func (s *state) advance(l limits, now int64) int64 {
	if s.width != l.width {
		s.rebucket(l)
	}
	last := s.clock // the latest call or answer counted, before now
	eff := max(now, s.clock)
	s.clock = eff
	cur := floorDiv(eff, l.width)
	lo, hi := cur-l.n, max(cur, s.head)
	if s.first() != lo || s.head != hi {
		c := make([]int64, hi-lo+1)
		for b := max(lo, s.first()); b <= min(hi, s.head); b++ {
			c[b-lo] = s.at(b)
		}
		s.counts, s.head = c, hi
	}
	if l.zone != nil {
		if s.zone == "" && s.dayEnd != 0 {
			// The day was begun in UTC days (by a replica that could not
			// learn the zone, or a version before zones were kept): it
			// ends at the account's first midnight after the last call it
			// counted, if sooner. Its calls may straddle an account
			// midnight; counting them all in the account's current day
			// errs on the side of fewer calls. A day begun in a zone is
			// ended by it, whatever this replica's zone (or that zone's
			// other name: HubSpot says US/Eastern for America/New_York).
			s.dayEnd = min(s.dayEnd, l.dayEndAfter(max(last, s.dayEnd-dayMicros), ""))
		}
		s.zone = l.zone.String()
	}
	if s.pausedUntil > s.dayEnd && s.dayEnd != 0 && s.pausedUntil%dayMicros == 0 && l.daily > 0 && s.dayCount >= l.daily {
		// A DAILY 429 seen by a version that counted UTC days (its pause
		// ends at a UTC midnight, with the day's count full) paused the key
		// past the day's end: HubSpot resets at the account's midnight.
		s.pausedUntil = s.dayEnd
	}
	if eff >= s.dayEnd {
		s.dayEnd, s.dayCount = l.dayEndAfter(eff, s.zone), 0
	}
	return eff
}

// rebucket converts counts recorded with another bucket width (another Window)
// to l's: every counted call is taken as made at the end of the newest old
// bucket, which can only make the window look fuller than it was.
func (s *state) rebucket(l limits) {
	var total int64
	for _, c := range s.counts {
		total += c
	}
	head := int64(0)
	if s.width > 0 {
		head = floorDiv((s.head+1)*s.width-1, l.width)
	}
	s.width, s.head = l.width, head
	s.counts = []int64{total}
}

// used returns W(c): the tokens counted in the window that ends with bucket c.
func (s *state) used(l limits, c int64) int64 {
	var u int64
	for b := c - l.n; b <= c; b++ {
		u += s.at(b)
	}
	return u
}

// earliest returns the first bucket x >= from such that tokens more in x
// keep W(c) + tokens <= limit for every bucket c in x … x+n, the buckets a
// grant in x is counted in, and, when paced, keep x's slice within l.burst
// (unless the slice is empty) (advance has run; tokens <= limit). From the newest bucket plus
// n+1 on every window and bucket is empty, so the search ends there.
func (s *state) earliest(l limits, from, tokens int64, paced bool) int64 {
	last := max(from, s.head+l.n+1)
	lo, hi := min(s.first(), from-l.n), last+l.n
	sum := make([]int64, hi-lo+2) // sum[i] is the tokens in buckets lo … lo+i-1
	for b := lo; b <= hi; b++ {
		sum[b-lo+1] = sum[b-lo] + s.at(b)
	}
	w := func(c int64) int64 { return sum[c-lo+1] - sum[c-l.n-lo] }
	for x := from; x < last; {
		if paced && l.burst > 0 {
			first := floorDiv(x, bucketsPerSlice) * bucketsPerSlice
			if in := sum[first+bucketsPerSlice-lo] - sum[first-lo]; in > 0 && in+tokens > l.burst {
				x = first + bucketsPerSlice // the next slice
				continue
			}
		}
		c := x
		for c <= x+l.n && w(c)+tokens <= l.limit {
			c++
		}
		if c > x+l.n {
			return x
		}
		x = c + 1 // every x' <= c is counted in c, which has no room
	}
	return last
}

// ahead is how far ahead (µs) a grant may be booked when the caller asks for
// d: at most one window, so that a booked grant is never counted beyond what
// the stored window keeps.
func (l limits) ahead(d time.Duration) int64 {
	return min(max(d.Microseconds(), 0), l.window)
}

// useBy is the latest moment (µs) a call granted in bucket x may start and
// still be counted for a whole window after it: the grant leaves the count
// when the current bucket passes x+n, at (x+n+1)*width.
func (l limits) useBy(x int64) int64 {
	return (x+l.n+1)*l.width - l.window
}

// reserve grants tokens at now (µs) or returns how long until it could.
// A grant says by when its calls must start (UseBy, on the caller's clock); a
// refusal's wait gets a random extra of up to l.spread.
func (s *state) reserve(l limits, now, tokens int64) Reservation {
	return s.schedule(l, now, tokens, 0)
}

// schedule grants tokens for the earliest instant from now (µs) on, at most
// within µs ahead, at which the budget has room, or refuses with how long
// until it will have room. A grant booked ahead says from when (Wait) and by
// when (UseBy) its calls may start, on the caller's clock; a grant for now
// has no Wait.
func (s *state) schedule(l limits, now, tokens, within int64) Reservation {
	eff := s.advance(l, now)
	start := max(eff, s.pausedUntil) // the earliest instant a call may start
	// Grants for now are not paced: a caller that cannot wait gets any room
	// the window has. Grants booked ahead are.
	x := s.earliest(l, floorDiv(start, l.width), tokens, within > 0)
	at := max(start, x*l.width)
	if l.daily > 0 && s.dayCount+tokens > l.daily {
		at = max(at, s.dayEnd) // never booked: today's count is full
		within = 0
	}
	if at > eff+within {
		s.shortAt = eff
		wait := at - now
		if l.spread > 0 {
			wait += rand.Int64N(l.spread)
		}
		return Reservation{RetryAfter: time.Duration(wait) * time.Microsecond}
	}
	if x > s.head {
		s.counts = append(s.counts, make([]int64, x-s.head)...)
		s.head = x
	}
	s.counts[x-s.first()] += tokens
	s.dayCount += tokens
	// On the caller's clock: a replica whose clock is behind the latest one
	// recorded (eff > now) gets as much less time.
	res := Reservation{Granted: true, UseBy: time.UnixMicro(l.useBy(x) - (eff - now)).UTC(), bucket: x, width: l.width}
	if at > eff {
		res.Wait = time.Duration(at-eff) * time.Microsecond
		// Booked ahead: by pacing alone, or because the window is full?
		res.Full = s.earliest(l, floorDiv(start, l.width), tokens, false)*l.width > start
		if res.Full {
			s.shortAt = eff
		}
	}
	return res
}

// observe applies what HubSpot said at now (µs). See (*SQL).Observe for the rules.
func (s *state) observe(l limits, now int64, o Observation) {
	eff := s.advance(l, now)
	cur := floorDiv(eff, l.width)
	if o.Grant.Granted {
		s.answered(l, o.Grant, cur)
	}
	add := func(tokens int64) {
		if tokens > 0 {
			s.counts[cur-s.first()] += tokens
		}
	}
	if o.Max > 0 { // the headers were present
		if left, rem := l.limit-s.used(l, cur), int64(max(o.Remaining, 0)); rem < left {
			add(left - rem)
		}
	}
	if o.DailyMax > 0 && l.daily > 0 {
		if left, rem := l.daily-s.dayCount, int64(max(o.DailyRemaining, 0)); rem < left {
			s.dayCount = l.daily - rem
		}
	}
	if !o.RateLimited {
		return
	}
	retry := eff + max(o.RetryAfter, 0).Microseconds()
	if o.Policy == PolicyDaily {
		if l.daily > 0 {
			s.dayCount = max(s.dayCount, l.daily)
		}
		s.pausedUntil = max(s.pausedUntil, retry, s.dayEnd)
		return
	}
	// The window is full as far as HubSpot is concerned: count the calls we did
	// not see as made now, and pause until the oldest call we counted leaves.
	add(l.limit - s.used(l, cur))
	s.pausedUntil = max(s.pausedUntil, retry, s.earliest(l, cur, 1, false)*l.width)
}

// answered counts one call of grant g, answered in bucket cur, from its
// answer instead of from its grant. The call left for HubSpot before the
// answer came, so HubSpot counts it until cur's end + window at the latest:
// counted in bucket y = cur - (n - nw) (the n buckets y … y+n), it is counted
// until then. A grant is counted from its bucket x for window + lead, so
//   - a call answered within the lead (y < x, the usual case) moves to y and
//     frees its room after window + one bucket from its answer instead of
//     window + lead from its grant; the windows it joins, y … x-1, are
//     past ones (x <= cur), where no grant is made any more, so no grant made
//     or booked from now on loses room it was given;
//   - a call answered later than that (y > x) reached HubSpot, perhaps, after
//     its UseBy: it moves to y, and is counted for as long as HubSpot may
//     count it, even where that fills a window grants were booked in (they
//     were counted against a window that did not hold it).
//
// A call answered after its grant left the window is counted anew from its
// answer.
func (s *state) answered(l limits, g Reservation, cur int64) {
	y := cur - (l.n - l.nw)
	if g.width != l.width || y == g.bucket || g.bucket > cur {
		// Rebucketed since (another Window), counted just as long, or
		// answered before its grant's bucket (a call must not start before
		// its grant): left as it is.
		return
	}
	if g.bucket >= s.first() {
		i := g.bucket - s.first()
		if s.counts[i] == 0 {
			return // nothing left to move: a caller observed its grant twice
		}
		s.counts[i]--
	}
	s.counts[y-s.first()]++
}

// pausedFor is how long a pause until until (µs) lasts from now (µs).
func pausedFor(until, now int64) time.Duration {
	return time.Duration(max(until-now, 0)) * time.Microsecond
}

// Policy names of HubSpot's 429 answers (policyName).
const (
	PolicyTenSecondlyRolling = "TEN_SECONDLY_ROLLING"
	PolicySecondly           = "SECONDLY"
	PolicyDaily              = "DAILY"
)

// encodeCounts writes the nonzero buckets as "age:count" pairs, newest first,
// where age is the distance from the head bucket: "0:3,17:5".
func encodeCounts(counts []int64) string {
	var b strings.Builder
	for i := len(counts) - 1; i >= 0; i-- {
		if counts[i] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(len(counts) - 1 - i))
		b.WriteByte(':')
		b.WriteString(strconv.FormatInt(counts[i], 10))
	}
	return b.String()
}

var errCorruptState = errors.New("budget: corrupt stored window")

// maxStoredAge bounds the ages decodeCounts accepts, so a corrupt row cannot
// make it allocate without limit.
const maxStoredAge = 1 << 16

// decodeCounts parses encodeCounts' text into a slice whose last element is the
// head bucket.
func decodeCounts(text string) ([]int64, error) {
	if text == "" {
		return nil, nil
	}
	var counts []int64
	for pair := range strings.SplitSeq(text, ",") {
		a, c, ok := strings.Cut(pair, ":")
		age, err1 := strconv.Atoi(a)
		count, err2 := strconv.ParseInt(c, 10, 64)
		if !ok || err1 != nil || err2 != nil || age < 0 || age > maxStoredAge || count < 0 {
			return nil, fmt.Errorf("%w: bad bucket %q in %q", errCorruptState, pair, text)
		}
		if age >= len(counts) {
			grown := make([]int64, age+1)
			copy(grown[age+1-len(counts):], counts)
			counts = grown
		}
		counts[len(counts)-1-age] += count
	}
	return counts, nil
}

// loadState rebuilds a state from its stored form for limits l.
func loadState(l limits, width, head int64, counts string) (state, error) {
	cs, err := decodeCounts(counts)
	if err != nil {
		return state{}, err
	}
	s := state{width: width, head: head}
	if width == l.width {
		// Same bucket width: keep the newest buckets that can still count, the
		// window (n+1) and grants booked up to a window ahead (n more); older
		// ones are out of the window anyway, and advance trims the rest.
		s.counts = make([]int64, min(int64(len(cs)), 2*l.n+1))
		for i := 1; i <= len(cs) && i <= len(s.counts); i++ {
			s.counts[len(s.counts)-i] = cs[len(cs)-i]
		}
		return s, nil
	}
	s.counts = cs // advance rebuckets them
	return s, nil
}
