package hubspotsim

import (
	"bytes"
	"context"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// emitLocked queues a webhook event; ev.SubscriptionType holds only the
// suffix (".creation", ...). Nothing is queued without a webhook URL.
func (s *Server) emitLocked(objectType string, src source, ev hubspot.WebhookEvent) {
	if s.whURL == "" || s.suppressLocked() {
		return
	}
	ev.SubscriptionType = singular(objectType) + ev.SubscriptionType
	s.nextEvent++
	ev.EventID = s.nextEvent
	ev.SubscriptionID = subscriptionID(ev.SubscriptionType)
	ev.PortalID = s.cfg.PortalID
	ev.AppID = s.cfg.AppID
	ev.OccurredAt = s.cfg.Now().UnixMilli()
	ev.ChangeSource = src.changeSource
	ev.SourceID = src.sourceID
	s.whQueue = append(s.whQueue, ev)
	s.addPendingLocked(1)
	select {
	case s.whWake <- struct{}{}:
	default:
	}
}

// subscriptionID gives each subscription type a stable id, as an app's
// subscriptions have.
func subscriptionID(subscriptionType string) int64 {
	h := fnv.New32a()
	h.Write([]byte(subscriptionType))
	return 100000 + int64(h.Sum32()%900000)
}

func (s *Server) addPendingLocked(n int) {
	before := s.whPending
	s.whPending += n
	if before == 0 && s.whPending > 0 {
		s.whIdle = make(chan struct{})
	}
	if before > 0 && s.whPending == 0 {
		close(s.whIdle)
	}
}

// dispatchLoop cuts the queue into batches and hands each to a delivery
// goroutine, at most WebhookConcurrency at once. A slot is taken before the
// batch is cut, so events arriving while all slots are busy fill bigger batches.
func (s *Server) dispatchLoop() {
	defer s.wg.Done()
	for {
		select {
		case <-s.closeCh:
			return
		case <-s.whWake:
		}
		for {
			select {
			case s.whSem <- struct{}{}:
			case <-s.closeCh:
				return
			}
			s.mu.Lock()
			n := min(len(s.whQueue), s.cfg.WebhookBatchSize)
			if n == 0 {
				s.mu.Unlock()
				<-s.whSem
				break
			}
			batch := append([]hubspot.WebhookEvent(nil), s.whQueue[:n]...)
			s.whQueue = append(s.whQueue[:0:0], s.whQueue[n:]...)
			s.mu.Unlock()
			s.wg.Add(1)
			go s.deliver(batch)
		}
	}
}

// deliver owns one slot of whSem on entry and releases it on return.
func (s *Server) deliver(batch []hubspot.WebhookEvent) {
	defer s.wg.Done()
	for attempt := 0; ; attempt++ {
		for i := range batch {
			batch[i].AttemptNumber = attempt
		}
		ok, dup := s.post(batch, false)
		if ok {
			if dup {
				s.post(batch, true)
			}
			s.mu.Lock()
			s.counters.WebhooksSent += int64(len(batch))
			s.addPendingLocked(-len(batch))
			s.mu.Unlock()
			<-s.whSem
			return
		}
		if attempt+1 >= s.cfg.WebhookMaxAttempts {
			s.mu.Lock()
			s.counters.WebhooksDropped += int64(len(batch))
			s.addPendingLocked(-len(batch))
			s.mu.Unlock()
			s.log.Warn("hubspotsim: webhook batch dropped", "events", len(batch), "attempts", attempt+1)
			<-s.whSem
			return
		}
		<-s.whSem
		t := time.NewTimer(s.retryDelay(attempt))
		select {
		case <-t.C:
		case <-s.closeCh:
			t.Stop()
			return
		}
		select {
		case s.whSem <- struct{}{}:
		case <-s.closeCh:
			return
		}
	}
}

// retryDelay is WebhookRetryBase × 2^attempt × a random factor in [0.5, 1.5).
func (s *Server) retryDelay(attempt int) time.Duration {
	s.mu.Lock()
	jitter := 0.5 + s.rng.Float64()
	s.mu.Unlock()
	d := float64(s.cfg.WebhookRetryBase) * float64(int64(1)<<min(attempt, 20)) * jitter
	return time.Duration(d)
}

// post sends one signed webhook request. It reports whether the attempt
// counts as delivered and whether a duplicate should follow.
func (s *Server) post(batch []hubspot.WebhookEvent, duplicate bool) (ok, dup bool) {
	s.mu.Lock()
	url := s.whURL
	failFault := !duplicate && s.faults.WebhookFailure > 0 && s.rng.Float64() < s.faults.WebhookFailure
	dup = !duplicate && s.faults.WebhookDuplicate > 0 && s.rng.Float64() < s.faults.WebhookDuplicate
	s.mu.Unlock()
	if url == "" {
		return false, false
	}
	body, err := json.Marshal(batch)
	if err != nil {
		s.log.Error("hubspotsim: encode webhook batch", "err", err)
		return false, false
	}
	ts := s.cfg.Now().UnixMilli()
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		s.log.Error("hubspotsim: build webhook request", "err", err)
		return false, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "HubSpot Connect 2.0 (http://dev.hubspot.com/) (namespace: webhooks-nonretryable) - hubspotsim")
	req.Header.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(s.cfg.ClientSecret, http.MethodPost, url, body, ts))
	req.Header.Set(hubspot.HeaderRequestTimestamp, strconv.FormatInt(ts, 10))
	req.Header.Set(hubspot.HeaderSignatureVersion, "v3")
	resp, err := s.whClient.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		_ = resp.Body.Close()
		ok = resp.StatusCode >= 200 && resp.StatusCode < 300
	}
	s.mu.Lock()
	s.counters.WebhookDeliveries++
	if duplicate {
		s.counters.FaultsInjected["webhookDuplicate"]++
	}
	if ok && failFault {
		ok = false
		s.counters.FaultsInjected["webhookFailure"]++
	}
	if !ok && !duplicate {
		s.counters.WebhookFailures++
	}
	s.mu.Unlock()
	if !ok {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		s.log.Debug("hubspotsim: webhook attempt failed", "status", status, "err", err, "events", len(batch), "attempt", batch[0].AttemptNumber)
	}
	return ok, dup && ok
}
