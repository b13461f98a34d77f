package budget

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// bucketsPerWindow is how finely a window is cut. Grants are counted per bucket
// (100 ms for a 10 s window), so a refused caller may be told to wait up to one
// bucket longer than an exact sliding log would say, never shorter.
const bucketsPerWindow = 100

const dayMicros = int64(24 * time.Hour / time.Microsecond)

// limits are the numbers one key is held to, in microseconds.
type limits struct {
	limit  int64 // tokens per window
	window int64 // window length
	lead   int64 // how long after a grant its calls may start
	spread int64 // a refusal's RetryAfter gets a random extra of [0, spread)
	width  int64 // bucket width
	n      int64 // buckets a grant is counted for, n*width >= window+lead
	daily  int64 // tokens per UTC day; <= 0 means none
}

func newLimits(limit int, window time.Duration, daily int) limits {
	return newPacedLimits(limit, window, daily, 0, 0)
}

// newPacedLimits is newLimits for a budget whose grants may be used up to
// lead after they are made: each grant is counted for window+lead, so a call
// made by then still leaves HubSpot's window before the budget forgets it.
func newPacedLimits(limit int, window time.Duration, daily int, lead, spread time.Duration) limits {
	w := window.Microseconds()
	width := max(w/bucketsPerWindow, 1)
	ld := max(lead.Microseconds(), 0)
	return limits{limit: int64(limit), window: w, lead: ld, spread: max(spread.Microseconds(), 0),
		width: width, n: (w + ld + width - 1) / width, daily: int64(daily)}
}

// state is what a budget keeps per key; the memory budget holds it in a map, the
// SQL budget in a row. It is a sliding window of per-bucket grant counts.
//
// Why it never over-grants: a grant made at time a is counted in bucket
// floor(a/width). At time t (bucket c) the window counts buckets c-n … c. A grant
// in bucket c-n-1 or older was made before (c-n)*width <= t-window-lead, so its
// calls, made by a+lead at the latest (the grant's UseBy), cannot share any
// window-length interval with t. Hence at every grant the calls counted cover
// every call in (t-window, t], and checking used+tokens <= limit there keeps
// every half-open interval of length window at or under the limit, counting
// each call at the moment it is made.
type state struct {
	width       int64   // bucket width the counts were recorded with; 0 for a new key
	head        int64   // bucket index of counts[len(counts)-1]
	counts      []int64 // counts[i] is the tokens granted in bucket head-len(counts)+1+i
	clock       int64   // latest clock reading recorded (µs); time never runs backwards
	day         int64   // UTC day number that dayCount counts
	dayCount    int64
	pausedUntil int64 // µs; no grants before this
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// advance moves the window to now (µs) and returns the effective time: now, or
// the latest time already recorded if now is earlier (a replica whose clock is
// behind).
func (s *state) advance(l limits, now int64) int64 {
	if s.width != l.width || int64(len(s.counts)) != l.n+1 {
		s.rebucket(l)
	}
	eff := max(now, s.clock)
	s.clock = eff
	if d := floorDiv(eff, l.width) - s.head; d > 0 {
		if d >= int64(len(s.counts)) {
			clear(s.counts)
		} else {
			copy(s.counts, s.counts[d:])
			clear(s.counts[int64(len(s.counts))-d:])
		}
		s.head += d
	}
	if day := floorDiv(eff, dayMicros); day > s.day {
		s.day, s.dayCount = day, 0
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
	s.counts = make([]int64, l.n+1)
	s.counts[l.n] = total
}

func (s *state) used() int64 {
	var u int64
	for _, c := range s.counts {
		u += c
	}
	return u
}

// freeAt returns when (µs) at least need counted tokens will have left the window.
func (s *state) freeAt(l limits, need int64) int64 {
	var freed int64
	first := s.head - int64(len(s.counts)) + 1
	for i, c := range s.counts {
		freed += c
		if freed >= need && c > 0 {
			// bucket b stops being counted once the current bucket is b+n+1
			return (first + int64(i) + l.n + 1) * l.width
		}
	}
	return (s.head + l.n + 1) * l.width // unreachable while need <= used
}

// useBy is the latest moment (µs) a call granted at eff may start and still be
// counted for a whole window after it: the grant leaves the count when the
// current bucket passes b+n, at (b+n+1)*width.
func (l limits) useBy(eff int64) int64 {
	return (floorDiv(eff, l.width)+l.n+1)*l.width - l.window
}

// reserve grants tokens at now (µs) or returns how long until it could.
// A grant says by when its calls must start (UseBy, on the caller's clock); a
// refusal's wait gets a random extra of up to l.spread.
func (s *state) reserve(l limits, now, tokens int64) Reservation {
	eff := s.advance(l, now)
	until := int64(0)
	if s.pausedUntil > eff {
		until = s.pausedUntil
	}
	if need := s.used() + tokens - l.limit; need > 0 {
		until = max(until, s.freeAt(l, need))
	}
	if l.daily > 0 && s.dayCount+tokens > l.daily {
		until = max(until, (s.day+1)*dayMicros)
	}
	if until > eff {
		wait := until - now
		if l.spread > 0 {
			wait += rand.Int64N(l.spread)
		}
		return Reservation{RetryAfter: time.Duration(wait) * time.Microsecond}
	}
	s.counts[len(s.counts)-1] += tokens
	s.dayCount += tokens
	// On the caller's clock: a replica whose clock is behind the latest one
	// recorded (eff > now) gets as much less time.
	return Reservation{Granted: true, UseBy: time.UnixMicro(l.useBy(eff) - (eff - now)).UTC()}
}

// observe applies what HubSpot said at now (µs). See (*SQL).Observe for the rules.
func (s *state) observe(l limits, now int64, o Observation) {
	eff := s.advance(l, now)
	cur := &s.counts[len(s.counts)-1]
	if o.Max > 0 { // the headers were present
		if left, rem := l.limit-s.used(), int64(max(o.Remaining, 0)); rem < left {
			*cur += left - rem
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
		s.pausedUntil = max(s.pausedUntil, retry, (s.day+1)*dayMicros)
		return
	}
	// The window is full as far as HubSpot is concerned: count the calls we did
	// not see as made now, and pause until the oldest call we counted leaves.
	if u := s.used(); u < l.limit {
		*cur += l.limit - u
	}
	s.pausedUntil = max(s.pausedUntil, retry, s.freeAt(l, 1))
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
		// Same bucket width: keep the n+1 newest buckets; older ones are out of
		// the window anyway.
		s.counts = make([]int64, l.n+1)
		for i := 1; i <= len(cs) && i <= len(s.counts); i++ {
			s.counts[len(s.counts)-i] = cs[len(cs)-i]
		}
		return s, nil
	}
	s.counts = cs // advance rebuckets them
	return s, nil
}
