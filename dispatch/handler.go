package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/store"
)

// WorkerPath is where QStash delivers.
const WorkerPath = "/qstash/hubspot"

// StatusNonRetryable with the header Upstash-NonRetryable-Error: true sends a
// message straight to QStash's dead letter queue.
const StatusNonRetryable = 489

// Defaults of HandlerConfig.
const (
	// MaxBodyBytes bounds a delivery's body ({"eventId": …} is tiny).
	MaxBodyBytes = 4 << 10
	// BusyRetryAfterDefault is the Retry-After answered when another delivery
	// holds the event or an earlier event of its record.
	BusyRetryAfterDefault = 5 * time.Second
	// maxSteps bounds the earlier events one delivery pushes before its own.
	maxSteps = 20
)

// ProcessIDs is the part of *outbound.Worker the Handler uses.
type ProcessIDs interface {
	ProcessIDs(ctx context.Context, ids []string) (outbound.Summary, error)
}

var _ ProcessIDs = (*outbound.Worker)(nil)

// HandlerConfig configures the worker endpoint. Every field but the optional
// ones is required.
type HandlerConfig struct {
	Store    store.Store
	Worker   ProcessIDs
	Verifier *qstash.Verifier
	// BusyRetryAfter is answered (503) while another delivery holds the event
	// or an earlier event of its record; default BusyRetryAfterDefault.
	BusyRetryAfter time.Duration
	// Wake is called after a delivery pushed events (the local publisher's
	// Notify): the next event of the record is publishable now. Optional.
	Wake    func()
	Metrics *Metrics
	Logger  *slog.Logger
}

// refusalLogEvery bounds how often refused signatures are logged.
const refusalLogEvery = 10 * time.Second

// Handler is the signed worker endpoint, POST /qstash/hubspot.
type Handler struct {
	cfg            HandlerConfig
	ps             *pubStore
	lastRefusalLog atomic.Int64
}

// NewHandler validates cfg and returns the Handler.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("HandlerConfig.Store is nil"))
	}
	if cfg.Worker == nil {
		errs = append(errs, errors.New("HandlerConfig.Worker is nil; pass the outbound worker"))
	}
	if cfg.Verifier == nil {
		errs = append(errs, errors.New("HandlerConfig.Verifier is nil; deliveries must be verified"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	cfg.BusyRetryAfter = cmp.Or(cfg.BusyRetryAfter, BusyRetryAfterDefault)
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ps, err := newPubStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	return &Handler{cfg: cfg, ps: ps}, nil
}

// answer is the Handler's reply to one delivery.
type answer struct {
	code       int
	retryAfter time.Duration
	msg        string
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a := h.serve(r)
	h.cfg.Metrics.delivered(a.code)
	switch a.code {
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(a.retryAfter)))
	case StatusNonRetryable:
		w.Header().Set("Upstash-NonRetryable-Error", "true")
	case http.StatusInternalServerError:
		h.cfg.Logger.Error("qstash delivery failed", "err", a.msg)
		a.msg = "internal error"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(a.code)
	io.WriteString(w, a.msg+"\n")
}

// retrySeconds rounds a wait up to whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

func (h *Handler) serve(r *http.Request) answer {
	if r.Method != http.MethodPost {
		return answer{code: http.StatusMethodNotAllowed, msg: "POST only"}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		return answer{code: http.StatusBadRequest, msg: "cannot read body"}
	}
	if len(body) > MaxBodyBytes {
		return answer{code: http.StatusRequestEntityTooLarge, msg: "body too large"}
	}
	if _, err := h.cfg.Verifier.VerifyRequest(r, body); err != nil {
		// At most one line per refusalLogEvery: a flood of forged requests
		// must not flood the log (the metric counts every one).
		if now := time.Now().UnixNano(); now-h.lastRefusalLog.Load() >= int64(refusalLogEvery) {
			h.lastRefusalLog.Store(now)
			h.cfg.Logger.Warn("qstash delivery refused: bad signature (check the signing keys and the worker URL)", "err", err)
		}
		return answer{code: http.StatusUnauthorized, msg: "invalid signature"}
	}
	var b Body
	if err := json.Unmarshal(body, &b); err != nil || b.EventID == "" || len(b.EventID) > 255 || textcheck.Problem(b.EventID) != "" {
		// Signed by QStash but not ours to parse: no retry can fix it.
		return answer{code: StatusNonRetryable, msg: `body is not {"eventId": "…"}`}
	}
	return h.deliver(r.Context(), b.EventID)
}

// deliver pushes the event, its record's earlier events first.
func (h *Handler) deliver(ctx context.Context, id string) answer {
	for range maxSteps {
		sum, err := h.cfg.Worker.ProcessIDs(ctx, []string{id})
		if err != nil && sum.Claimed == 0 {
			return answer{code: http.StatusInternalServerError, msg: err.Error()}
		}
		if sum.Claimed == 0 && sum.BudgetRetryAfter > 0 {
			// The budget refused a recent delivery and has no room yet:
			// nothing was claimed.
			return answer{code: http.StatusServiceUnavailable, retryAfter: sum.BudgetRetryAfter, msg: "HubSpot budget unavailable"}
		}
		if sum.Claimed > 0 {
			if h.cfg.Wake != nil && sum.Completed+sum.Failed > 0 {
				h.cfg.Wake()
			}
			return h.settled(ctx, id, sum, err)
		}
		ev, err := h.cfg.Store.Outbound().Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return answer{code: http.StatusOK, msg: "unknown event (cleaned up?): nothing to do"}
		}
		if err != nil {
			return answer{code: http.StatusInternalServerError, msg: err.Error()}
		}
		now := h.cfg.Store.Now()
		switch {
		case ev.Status == store.StatusProcessed:
			return answer{code: http.StatusOK, msg: "already processed"}
		case ev.Status == store.StatusFailed:
			return answer{code: http.StatusOK, msg: "dead-lettered; retry it with hubsync dlq"}
		case ev.Status == store.StatusProcessing && ev.LeaseExpiresDate != nil && ev.LeaseExpiresDate.After(now):
			return answer{code: http.StatusServiceUnavailable, retryAfter: h.cfg.BusyRetryAfter, msg: "in flight in another delivery"}
		case ev.Status == store.StatusPending && ev.NextAttemptDate.After(now):
			return answer{code: http.StatusServiceUnavailable, retryAfter: ev.NextAttemptDate.Sub(now), msg: "waiting for its next attempt"}
		}
		// Claimable but not claimed: an earlier event of its record is unfinished.
		hd, ok, err := h.ps.recordHead(ctx, ev)
		if err != nil {
			return answer{code: http.StatusInternalServerError, msg: err.Error()}
		}
		if !ok {
			continue // the record was unblocked meanwhile
		}
		switch {
		case hd.status == store.StatusProcessing && hd.leaseExpires != nil && hd.leaseExpires.After(now):
			return answer{code: http.StatusServiceUnavailable, retryAfter: h.cfg.BusyRetryAfter, msg: "an earlier event of the record is in flight"}
		case hd.status == store.StatusPending && hd.next.After(now):
			return answer{code: http.StatusServiceUnavailable, retryAfter: hd.next.Sub(now), msg: "an earlier event of the record waits for its next attempt"}
		}
		hs, err := h.cfg.Worker.ProcessIDs(ctx, []string{hd.id})
		if err != nil && hs.Claimed == 0 {
			return answer{code: http.StatusInternalServerError, msg: err.Error()}
		}
		if hs.Claimed == 0 && hs.BudgetRetryAfter > 0 {
			return answer{code: http.StatusServiceUnavailable, retryAfter: hs.BudgetRetryAfter, msg: "HubSpot budget unavailable"}
		}
		if hs.Claimed == 0 {
			continue // taken by another delivery, or it finished meanwhile: look again
		}
		if hs.Completed+hs.Failed < hs.Claimed {
			// The earlier event is not done (budget, retry, release): this one waits too.
			a := h.settled(ctx, hd.id, hs, err)
			a.msg = "an earlier event of the record: " + a.msg
			if a.code == StatusNonRetryable || a.code == http.StatusOK {
				continue
			}
			return a
		}
	}
	return answer{code: http.StatusServiceUnavailable, retryAfter: h.cfg.BusyRetryAfter, msg: "the record has many earlier events; pushing them"}
}

// settled turns the outcome of a cycle that claimed event id into an answer.
func (h *Handler) settled(ctx context.Context, id string, sum outbound.Summary, err error) answer {
	switch {
	case sum.BudgetRetryAfter > 0:
		return answer{code: http.StatusServiceUnavailable, retryAfter: sum.BudgetRetryAfter, msg: "HubSpot budget unavailable"}
	case sum.Failed > 0:
		return answer{code: StatusNonRetryable, msg: "failed permanently; dead-lettered"}
	case sum.Completed >= sum.Claimed && err == nil:
		return answer{code: http.StatusOK, msg: "ok"}
	}
	// Retried or released: answer with the wait until it is due again.
	wait := h.cfg.BusyRetryAfter
	if ev, gerr := h.cfg.Store.Outbound().Get(ctx, id); gerr == nil {
		switch {
		case ev.Status == store.StatusProcessed:
			return answer{code: http.StatusOK, msg: "ok"}
		case ev.Status == store.StatusFailed:
			return answer{code: StatusNonRetryable, msg: "failed permanently; dead-lettered"}
		case ev.Status == store.StatusPending:
			wait = max(ev.NextAttemptDate.Sub(h.cfg.Store.Now()), time.Second)
		}
	}
	msg := "will be retried"
	if err != nil {
		msg += ": " + err.Error()
	}
	return answer{code: http.StatusServiceUnavailable, retryAfter: wait, msg: msg}
}
