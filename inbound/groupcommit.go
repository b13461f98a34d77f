package inbound

import (
	"context"
	"sync"
	"time"

	"github.com/hubsync/hubsync/store"
)

// groupCommit writes concurrent deliveries together: while a store
// transaction runs, the deliveries that arrive wait in arrival order, and the
// next transaction takes as many of them as fit in maxEvents. Under load one
// commit then serves many deliveries instead of each paying its own, and no
// delivery waits for more than the transactions ahead of it.
//
// There is no background goroutine: a delivery that finds a free slot leads,
// writing batches from the head of the queue until its own is written, then
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
}

// pendingWrite is one delivery waiting to be written.
type pendingWrite struct {
	evs  []store.InboundEvent
	res  []store.EnqueueResult
	err  error
	done chan struct{} // closed when written (or failed)
	lead chan struct{} // closed when handed a slot
	// taken and led are guarded by groupCommit.mu.
	taken bool // in a batch (being) written: it can no longer leave
	led   bool // holds a slot: it must write batches or pass the slot on
}

// enqueue stores evs, alone or with other deliveries, and returns their
// results in order.
func (g *groupCommit) enqueue(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	p := &pendingWrite{evs: evs, done: make(chan struct{}), lead: make(chan struct{})}
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

// leadUntil writes batches from the head of the queue until p is written,
// or is being written by another leader, then passes its slot on.
func (g *groupCommit) leadUntil(ctx context.Context, p *pendingWrite) {
	wctx := context.WithoutCancel(ctx)
	for {
		g.mu.Lock()
		if p.taken {
			// Written, or in another leader's batch: p.done follows.
			g.passLocked()
			g.mu.Unlock()
			return
		}
		batch := g.takeLocked() // p is queued, so the batch is not empty
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

// takeLocked removes from the head of the queue the deliveries the next
// transaction writes: at least one, then as many as fit in maxEvents.
func (g *groupCommit) takeLocked() []*pendingWrite {
	n, events := 0, 0
	for n < len(g.queue) {
		k := len(g.queue[n].evs)
		if n > 0 && events+k > g.maxEvents {
			break
		}
		events += k
		n++
	}
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	for _, p := range batch {
		p.taken = true
	}
	return batch
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
