package demo

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/store"
)

// Recovery is what the kills cost: the events whose lease a replica held
// when it was SIGKILLed, and how long each took from that kill to processed.
// They wait for their lease to expire (or for a heartbeat that no longer
// comes) before another replica claims them, so this is the figure a lease
// design is judged by, apart from the budget's pauses that every event meets.
type Recovery struct {
	// Kills counts the SIGKILLs of a running process; Read counts those whose
	// leases could be read (not while the database restarts).
	Kills, Read int
	// Leased counts, per queue, the events leased by a killed process at its
	// kill; an event leased by two killed processes in turn counts once, from
	// the first kill.
	Leased map[store.Direction]int
	// Latency is, per queue, kill → processed of those of them processed
	// (Latency.N); Leased - N were dead-lettered or never finished.
	Latency map[store.Direction]Latency
	// LeaseLeft is, per queue, how long their leases still had to run at the
	// kill (0 for one already expired): the part of Latency spent waiting
	// for the lease rather than for a claim, the budget or HubSpot.
	LeaseLeft map[store.Direction]Latency
}

// eventRef names one event of one queue.
type eventRef struct {
	dir store.Direction
	id  string
}

// cutLease is an event's lease as a kill found it.
type cutLease struct {
	killedAt, expires time.Time
}

// recoveryTracker remembers, for each event leased by a killed process, the
// first kill that cut its lease.
type recoveryTracker struct {
	q *queries

	mu          sync.Mutex
	kills, read int
	cut         map[eventRef]cutLease
}

func newRecoveryTracker(q *queries) *recoveryTracker {
	return &recoveryTracker{q: q, cut: map[eventRef]cutLease{}}
}

// killed records the kill of process pid at at: it reads the leases the
// process held. It runs before any other replica could claim them (they
// are still live), and gives up after a few seconds (the database may be
// restarting), counting the kill as not read.
func (t *recoveryTracker) killed(ctx context.Context, pid int, at time.Time) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	leases, err := t.q.leasedBy(ctx, service.OwnerPrefix(pid))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kills++
	if err != nil {
		return
	}
	t.read++
	for r, expires := range leases {
		if _, ok := t.cut[r]; !ok {
			t.cut[r] = cutLease{killedAt: at, expires: expires}
		}
	}
}

// result measures each cut lease's kill → processed.
func (t *recoveryTracker) result(ctx context.Context) (Recovery, error) {
	processed, err := t.q.processedDates(ctx)
	if err != nil {
		return Recovery{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	rec := recoveryOf(t.cut, processed)
	rec.Kills, rec.Read = t.kills, t.read
	return rec, nil
}

// recoveryOf measures, per queue, kill → processed of the events in cut
// (event → its lease at its kill) that processed holds (event → processed
// date), and the lease each had left.
func recoveryOf(cut map[eventRef]cutLease, processed map[eventRef]time.Time) Recovery {
	rec := Recovery{Leased: map[store.Direction]int{}, Latency: map[store.Direction]Latency{}, LeaseLeft: map[store.Direction]Latency{}}
	// The clocks are the chaos run's, the replicas' and the database's, on
	// one machine; a completion or an expiry the kill raced is 0, not negative.
	ms := func(d time.Duration) float64 { return float64(max(d, 0)) / float64(time.Millisecond) }
	done, left := map[store.Direction][]float64{}, map[store.Direction][]float64{}
	for r, c := range cut {
		rec.Leased[r.dir]++
		left[r.dir] = append(left[r.dir], ms(c.expires.Sub(c.killedAt)))
		if at, ok := processed[r]; ok {
			done[r.dir] = append(done[r.dir], ms(at.Sub(c.killedAt)))
		}
	}
	for d, l := range done {
		rec.Latency[d] = latencyOf(l)
	}
	for d, l := range left {
		rec.LeaseLeft[d] = latencyOf(l)
	}
	return rec
}

func (r Recovery) write(w io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(w, format+"\n", a...) }
	p("recovery after a kill: events leased by a replica when it was SIGKILLed, kill → processed (leases read at %d of %d kills):", r.Read, r.Kills)
	for _, d := range []store.Direction{store.DirectionOutbound, store.DirectionInbound, store.DirectionInternal} {
		n := r.Leased[d]
		if n == 0 {
			p("  %-9s none", d)
			continue
		}
		l, left := r.Latency[d], r.LeaseLeft[d]
		p("  %-9s %s; %d of %d not processed; lease left at the kill p50 %s, max %s",
			d, l, n-l.N, n, left.P50.Round(time.Millisecond), left.Max.Round(time.Millisecond))
	}
}

// leasedBy maps the events processing under a lease whose owner starts with
// prefix to their LeaseExpiresDate.
func (q *queries) leasedBy(ctx context.Context, prefix string) (map[eventRef]time.Time, error) {
	like := prefix + "%"
	return q.eventTimes(ctx, "leases of "+prefix, "leased_by", like, like, like)
}

// processedDates maps every processed event of the three queues to its ProcessedDate.
func (q *queries) processedDates(ctx context.Context) (map[eventRef]time.Time, error) {
	return q.eventTimes(ctx, "processed dates", "processed_dates")
}

// eventTimes runs query, whose rows are (queue, event id, time), and maps
// each event to its time; what names the read in errors.
func (q *queries) eventTimes(ctx context.Context, what, query string, args ...any) (map[eventRef]time.Time, error) {
	rows, err := q.db.QueryContext(ctx, q.q.Get(query), args...)
	if err != nil {
		return nil, fmt.Errorf("demo: %s: %w", what, err)
	}
	defer rows.Close()
	out := map[eventRef]time.Time{}
	for rows.Next() {
		var (
			r  eventRef
			at time.Time
		)
		if err := rows.Scan(&r.dir, &r.id, dialectsql.TimeDest(&at)); err != nil {
			return nil, fmt.Errorf("demo: %s: %w", what, err)
		}
		out[r] = at
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("demo: %s: %w", what, err)
	}
	return out, nil
}
