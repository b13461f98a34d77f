package qstashsim

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Message states, as QStash names them.
const (
	stateCreated   = "CREATED"
	stateActive    = "ACTIVE"
	stateRetry     = "RETRY"
	stateDelivered = "DELIVERED"
	stateError     = "ERROR" // in the DLQ
)

// responseBodyMax bounds the part of a failed answer kept for the DLQ.
const responseBodyMax = 64 << 10

type message struct {
	id         string
	url        string // the destination exactly as published: the signature's sub
	opts       publishOptions
	body       []byte
	callerIP   string
	createdAt  time.Time
	state      string
	retried    int             // retries scheduled so far
	delays     []time.Duration // unscaled wait before each retry
	deliveries int             // attempts that reached the receiver
}

type attempt struct {
	seq       uint64
	msg       *message
	due       time.Time // wall clock
	retried   int       // Upstash-Retried of this attempt
	duplicate bool      // an injected second delivery of a delivered message
}

type flowState struct {
	fc       FlowControl
	inFlight int
	starts   []time.Time // attempts started within the last period, oldest first
}

type deliveryResult struct {
	err    error
	status int
	header http.Header
	body   []byte
}

var errDropped = errors.New("qstashsim: attempt dropped by fault injection")

func (s *Server) enqueueLocked(a *attempt) {
	s.seq++
	a.seq = s.seq
	heap.Push(&s.timed, a)
	s.addPendingLocked(1)
	s.signal()
}

// attemptHeap is a min-heap of attempts by due time, then enqueue order.
type attemptHeap []*attempt

func (h attemptHeap) Len() int { return len(h) }
func (h attemptHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h attemptHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *attemptHeap) Push(x any)   { *h = append(*h, x.(*attempt)) }
func (h *attemptHeap) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return a
}

// scheduleLoop starts due attempts that their flow-control key admits, and
// sleeps until the next one is due, a rate window slides, or something
// changes (a publish, a finished delivery).
func (s *Server) scheduleLoop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		next := s.startDue()
		var tc <-chan time.Time
		if !next.IsZero() {
			timer.Reset(max(time.Until(next), 0))
			tc = timer.C
		}
		select {
		case <-s.closeCh:
			return
		case <-s.wake:
		case <-tc:
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// startDue moves attempts that have come due to their key's ready queue,
// starts each key's ready attempts in order while the key admits them, and
// returns when the loop must look again without being woken (zero: only when
// woken). Its cost is the attempts started plus the keys waiting, not the
// length of the queue.
func (s *Server) startDue() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return time.Time{}
	}
	now := time.Now()
	var next time.Time
	earlier := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for len(s.timed) > 0 && !s.timed[0].due.After(now) {
		a := heap.Pop(&s.timed).(*attempt)
		key := a.msg.opts.flowKey
		s.ready[key] = append(s.ready[key], a)
	}
	if len(s.timed) > 0 {
		earlier(s.timed[0].due)
	}
	for key, q := range s.ready {
		i := 0
		for ; i < len(q); i++ {
			ok, retryAt := s.admitLocked(key, now)
			if !ok {
				earlier(retryAt)
				break
			}
			s.wg.Add(1)
			go s.dispatch(q[i])
		}
		if i == len(q) {
			delete(s.ready, key)
			continue
		}
		clear(q[:i])
		s.ready[key] = q[i:]
	}
	return next
}

// admitLocked takes a delivery slot of key at now, or reports when to try
// again: the zero time when only a finishing delivery can free a slot.
func (s *Server) admitLocked(key string, now time.Time) (ok bool, retryAt time.Time) {
	f := s.flows[key]
	if key == "" || f == nil {
		return true, time.Time{}
	}
	if f.fc.Rate > 0 {
		cut := now.Add(-f.fc.Period)
		i := 0
		for i < len(f.starts) && !f.starts[i].After(cut) {
			i++
		}
		f.starts = f.starts[i:]
	} else {
		f.starts = nil
	}
	if f.fc.Parallelism > 0 && f.inFlight >= f.fc.Parallelism {
		return false, time.Time{}
	}
	if f.fc.Rate > 0 && len(f.starts) >= f.fc.Rate {
		return false, f.starts[0].Add(f.fc.Period)
	}
	f.inFlight++
	s.stats.MaxParallelism[key] = max(s.stats.MaxParallelism[key], f.inFlight)
	if f.fc.Rate > 0 {
		f.starts = append(f.starts, now)
		s.stats.MaxRatePerPeriod[key] = max(s.stats.MaxRatePerPeriod[key], len(f.starts))
	}
	return true, time.Time{}
}

func (s *Server) dispatch(a *attempt) {
	defer s.wg.Done()
	s.mu.Lock()
	drop := s.faults.Drop > 0 && s.rng.Float64() < s.faults.Drop
	delay := s.faults.Delay > 0 && s.rng.Float64() < s.faults.Delay
	delayFor := s.faults.DelayDuration
	key := s.cfg.CurrentSigningKey
	if s.signWithNext {
		key = s.cfg.NextSigningKey
	}
	jti := s.newIDLocked("jwt_")
	s.stats.Attempts++
	if drop {
		s.stats.Dropped++
	}
	if delay {
		s.stats.Delayed++
	}
	if !a.duplicate {
		a.msg.state = stateActive
	}
	s.mu.Unlock()

	if delay {
		t := time.NewTimer(delayFor)
		select {
		case <-t.C:
		case <-s.closeCh:
			t.Stop()
		}
	}
	var res deliveryResult
	if drop {
		res.err = errDropped
	} else {
		res = s.send(a, key, jti)
	}
	s.finish(a, res)
}

// send makes one delivery attempt.
func (s *Server) send(a *attempt, key, jti string) deliveryResult {
	m := a.msg
	if s.ctx.Err() != nil {
		return deliveryResult{err: ErrClosed}
	}
	ctx, cancel := context.WithTimeout(s.ctx, m.opts.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, m.opts.method, m.url, bytes.NewReader(m.body))
	if err != nil {
		return deliveryResult{err: err}
	}
	for k, vs := range m.opts.header {
		req.Header[k] = slices.Clone(vs)
	}
	req.Header.Set(HeaderSignature, Sign(key, NewClaims(m.url, m.body, s.cfg.Now(), jti)))
	req.Header.Set(HeaderMessageID, m.id)
	req.Header.Set(HeaderRetried, strconv.Itoa(a.retried))
	req.Header.Set("User-Agent", UserAgent)
	if m.callerIP != "" {
		req.Header.Set(HeaderCallerIP, m.callerIP)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return deliveryResult{err: err}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, responseBodyMax))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return deliveryResult{status: resp.StatusCode, header: resp.Header, body: body}
}

// finish frees the attempt's slot and decides what follows: done, a
// duplicate (fault), a retry, or the DLQ.
func (s *Server) finish(a *attempt, res deliveryResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.signal()
	defer s.addPendingLocked(-1) // after any follow-up is queued, so WaitIdle cannot return early
	m := a.msg
	if f := s.flows[m.opts.flowKey]; f != nil && m.opts.flowKey != "" {
		f.inFlight--
	}
	if s.ctx.Err() != nil {
		return
	}
	if res.err == nil {
		m.deliveries++
	}
	ok := res.err == nil && res.status >= 200 && res.status < 300
	if !ok {
		s.stats.Failed++
		s.log.Debug("qstashsim: delivery failed", "message", m.id, "status", res.status, "err", res.err, "retried", a.retried, "duplicate", a.duplicate)
	}
	if a.duplicate {
		return
	}
	if ok {
		m.state = stateDelivered
		s.stats.Delivered++
		if s.faults.Duplicate > 0 && s.rng.Float64() < s.faults.Duplicate {
			s.stats.Duplicated++
			s.enqueueLocked(&attempt{msg: m, due: time.Now(), retried: a.retried, duplicate: true})
		}
		return
	}
	if res.status == StatusNonRetryable && strings.EqualFold(strings.TrimSpace(res.header.Get(HeaderNonRetryableError)), "true") {
		s.stats.NonRetryable++
		s.toDLQLocked(m, res)
		return
	}
	if a.retried >= m.opts.retries {
		s.toDLQLocked(m, res)
		return
	}
	d, fromRetryAfter := s.retryDelay(m, a.retried, res)
	if fromRetryAfter {
		s.stats.RetryAfterHonoured++
	}
	m.delays = append(m.delays, d)
	m.retried = a.retried + 1
	m.state = stateRetry
	s.stats.Retried++
	s.enqueueLocked(&attempt{msg: m, due: time.Now().Add(s.scale(d)), retried: a.retried + 1})
}

// retryDelay is the wait before the retry after attempt retried failed: the
// worker's Retry-After on a 429 or 503, else the message's
// Upstash-Retry-Delay, else QStash's default backoff.
func (s *Server) retryDelay(m *message, retried int, res deliveryResult) (time.Duration, bool) {
	if res.err == nil && (res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable) {
		if d, ok := ParseRetryAfter(res.header.Get("Retry-After"), s.cfg.Now()); ok {
			return d, true
		}
	}
	if m.opts.retryDelay != nil {
		return m.opts.retryDelay.Delay(retried), false
	}
	return DefaultBackoff(retried + 1), false
}
