package inbound

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/hubsync/hubsync/store"
)

// groupCommit writes concurrent deliveries together: while a store
// transaction runs, the deliveries that arrive wait in a queue, in arrival
// order, and the next transaction takes as many of them as fit in maxEvents.
// Under load one commit then serves many deliveries instead of each paying its
// own.
//
// Two transactions that write events of one record wait on each other: the
// second blocks on the record's sequence counter until the first commits. So
// a transaction started while another runs passes over the waiting deliveries
// that share a record with the running one, and the later ones that share a
// record with a delivery it passed over (so a record's waiting events are
// still written in arrival order), and takes the others. A delivery is passed
// over at most once: a later transaction takes it whatever it shares, before
// the deliveries that arrived after it.
// Deliveries waiting together are all unacknowledged: HubSpot set no order
// among them (it guarantees none at all), and the SyncWorker orders a record's
// changes by occurredAt, not by arrival.
//
// There is no background goroutine: a delivery that finds a free slot leads,
// writing batches from the queue until its own is written, then
// hands the slot to the next waiting delivery (or frees it). A leader's flush
// runs without its request's cancellation, since other deliveries ride on it.
type groupCommit struct {
	write     func(context.Context, []store.InboundEvent) ([]store.EnqueueResult, error)
	slots     int // store transactions at once
	maxEvents int // events per transaction, unless one delivery alone has more
	timeout   time.Duration

	mu     sync.Mutex
	queue  []*pendingWrite
	active int
	// writing counts the events of the batches being written by record, to
	// tell which waiting deliveries share a record with them.
	writing map[inboundRecord]int
}

// inboundRecord is the record an inbound event's sequence counter belongs to.
type inboundRecord struct{ source, objectType, externalID string }

// recordsOf returns the record of each of evs's events, in order.
func recordsOf(evs []store.InboundEvent) []inboundRecord {
	rs := make([]inboundRecord, len(evs))
	for i := range evs {
		rs[i] = inboundRecord{evs[i].Source, evs[i].ObjectType, evs[i].ExternalID}
	}
	return rs
}

// pendingWrite is one delivery waiting to be written.
type pendingWrite struct {
	evs  []store.InboundEvent
	recs []inboundRecord // the record of each event, as enqueued
	res  []store.EnqueueResult
	err  error
	done chan struct{} // closed when written (or failed)
	lead chan struct{} // closed when handed a slot
	// taken, led and passed are guarded by groupCommit.mu.
	taken  bool // in a batch (being) written: it can no longer leave
	led    bool // holds a slot: it must write batches or pass the slot on
	passed bool // a batch passed over it once: no batch passes over it again
}

// enqueue stores evs, alone or with other deliveries, and returns their
// results in order.
func (g *groupCommit) enqueue(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	p := &pendingWrite{evs: evs, recs: recordsOf(evs), done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, p)
	if g.active < g.slots {
		g.active++
		p.led = true
	}
	led := p.led
	g.mu.Unlock()
	if !led {
		select {
		case <-p.done:
		case <-p.lead:
		case <-ctx.Done():
			g.mu.Lock()
			if !p.led && !p.taken {
				g.queue = removeWrite(g.queue, p)
				g.mu.Unlock()
				return nil, ctx.Err()
			}
			g.mu.Unlock()
		}
		g.mu.Lock()
		led = p.led // a slot handed over must be used or passed on
		g.mu.Unlock()
	}
	if led {
		g.leadUntil(ctx, p)
	}
	<-p.done
	return p.res, p.err
}

// leadUntil writes batches from the queue until p is written,
// or is being written by another leader, then passes its slot on.
func (g *groupCommit) leadUntil(ctx context.Context, p *pendingWrite) {
	wctx := context.WithoutCancel(ctx)
	var batch []*pendingWrite
	for {
		g.mu.Lock()
		g.doneLocked(batch)
		if p.taken {
			// Written, or in another leader's batch: p.done follows.
			g.passLocked()
			g.mu.Unlock()
			return
		}
		batch = g.takeLocked() // p is queued, so the batch is not empty
		g.mu.Unlock()
		g.flush(wctx, batch)
	}
}

// passLocked hands the caller's slot to the first waiting delivery that has
// none, or frees it.
func (g *groupCommit) passLocked() {
	for _, w := range g.queue {
		if !w.led {
			w.led = true
			close(w.lead)
			return
		}
	}
	g.active--
}

// takeLocked removes from the queue the deliveries the next transaction
// writes: at least one, then as many as fit in maxEvents, in queue order. It
// passes over (once) a delivery that shares a record with a batch being
// written, or with a delivery passed over before it in this take. When it
// would pass over every waiting delivery, it takes them from the head, in
// order, and passes over none.
func (g *groupCommit) takeLocked() []*pendingWrite {
	var batch, passed []*pendingWrite
	var behind map[inboundRecord]bool // records of the deliveries passed over
	events := 0
	for _, w := range g.queue {
		k := len(w.evs)
		if len(batch) > 0 && events+k > g.maxEvents {
			break
		}
		if !w.passed && (g.sharesWritingLocked(w) || sharesAny(w, behind)) {
			passed = append(passed, w)
			if behind == nil {
				behind = make(map[inboundRecord]bool)
			}
			for _, r := range w.recs {
				behind[r] = true
			}
			continue
		}
		batch = append(batch, w)
		events += k
	}
	if len(batch) == 0 {
		passed = nil
		for _, w := range g.queue {
			if len(batch) > 0 && events+len(w.evs) > g.maxEvents {
				break
			}
			batch = append(batch, w)
			events += len(w.evs)
		}
	}
	for _, w := range passed {
		w.passed = true
	}
	if g.writing == nil {
		g.writing = make(map[inboundRecord]int)
	}
	for _, w := range batch {
		w.taken = true
		for _, r := range w.recs {
			g.writing[r]++
		}
	}
	g.queue = slices.DeleteFunc(g.queue, func(w *pendingWrite) bool { return w.taken })
	return batch
}

// sharesWritingLocked reports whether w has an event of a record that a batch
// being written has too.
func (g *groupCommit) sharesWritingLocked(w *pendingWrite) bool {
	if len(g.writing) == 0 {
		return false
	}
	for _, r := range w.recs {
		if g.writing[r] > 0 {
			return true
		}
	}
	return false
}

// sharesAny reports whether w has an event of one of records.
func sharesAny(w *pendingWrite, records map[inboundRecord]bool) bool {
	if len(records) == 0 {
		return false
	}
	for _, r := range w.recs {
		if records[r] {
			return true
		}
	}
	return false
}

// doneLocked forgets the records of a batch that has been written.
func (g *groupCommit) doneLocked(batch []*pendingWrite) {
	for _, w := range batch {
		for _, r := range w.recs {
			if g.writing[r]--; g.writing[r] <= 0 {
				delete(g.writing, r)
			}
		}
	}
}

// flush writes batch in one transaction. When that fails and the batch holds
// several deliveries, each is written alone, so that one delivery's failure
// fails only that delivery.
func (g *groupCommit) flush(ctx context.Context, batch []*pendingWrite) {
	if len(batch) > 1 {
		var all []store.InboundEvent
		for _, p := range batch {
			all = append(all, p.evs...)
		}
		res, err := g.writeOne(ctx, all)
		if err == nil && len(res) == len(all) {
			for _, p := range batch {
				p.res, res = res[:len(p.evs):len(p.evs)], res[len(p.evs):]
				close(p.done)
			}
			return
		}
	}
	for _, p := range batch {
		p.res, p.err = g.writeOne(ctx, p.evs)
		close(p.done)
	}
}

func (g *groupCommit) writeOne(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	return g.write(ctx, evs)
}

func removeWrite(q []*pendingWrite, p *pendingWrite) []*pendingWrite {
	for i, x := range q {
		if x == p {
			return append(q[:i:i], q[i+1:]...)
		}
	}
	return q
}
