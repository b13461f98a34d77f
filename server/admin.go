package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/logtext"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/store"
)

// adminBodyMax bounds an admin request body.
const adminBodyMax = 1 << 20

// errBodyTooLarge answers 413: the body passed adminBodyMax.
var errBodyTooLarge = errors.New("request body too large")

// adminAPI serves /admin/… behind a bearer token.
type adminAPI struct {
	token []byte
	// failures counts and logs failed token attempts; nil counts nothing.
	failures       *authFailures
	st             store.Store
	rejected       *inbound.RejectedLog
	reconcileAfter time.Duration
	log            *slog.Logger
	// driftRunner runs POST /admin/drift; nil without a HubSpot client.
	driftRunner *driftRunner
	mapping     *mapping.Set
	// sched repairs what the reconciliation sweep finds (the dispatch mode's).
	sched ops.Scheduler
}

// register mounts the admin routes. Without a token they are not mounted at all,
// so they answer 404 like any unknown path.
func (a *adminAPI) register(mux *http.ServeMux) {
	if len(a.token) == 0 {
		return
	}
	auth := &bearerAuth{area: authAreaAdmin, realm: "hubsync admin", tokens: [][]byte{a.token}, failures: a.failures}
	handle := func(pattern string, h func(w http.ResponseWriter, r *http.Request) error) {
		mux.Handle(pattern, a.serve(auth, h))
	}
	handle("GET /admin/metrics", a.metrics)
	handle("GET /admin/deadletters", a.deadLetters)
	handle("GET /admin/rejected", a.rejectedEvents)
	handle("POST /admin/deadletters/retry", a.retry)
	handle("POST /admin/reconcile", a.reconcile)
	handle("POST /admin/drift", a.drift)
}

func (a *adminAPI) serve(auth *bearerAuth, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !auth.check(w, r) {
			return
		}
		if err := h(w, r); err != nil {
			status, code := http.StatusInternalServerError, "internal"
			if errors.Is(err, errBodyTooLarge) {
				status, code = http.StatusRequestEntityTooLarge, "too_large"
			} else if errors.Is(err, ops.ErrBadRequest) {
				status, code = http.StatusBadRequest, "bad_request"
			} else if errors.Is(err, context.Canceled) {
				return
			} else {
				a.log.Error("admin: request failed", "path", logtext.URI(r.URL.Path), "err", err)
			}
			writeError(w, status, code, err.Error())
		}
	})
}

func (a *adminAPI) metrics(w http.ResponseWriter, r *http.Request) error {
	m, err := ops.LoadMetrics(r.Context(), a.st)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// rejectedResponse is the answer of GET /admin/rejected.
type rejectedResponse struct {
	Rejected []inbound.RejectedEvent `json:"rejected"`
	// Next is the before= value of the next (older) page, empty on the last one.
	Next string `json:"next,omitempty"`
}

// rejectedEvents lists the webhook events refused on their own, newest first
// (?limit=, ?before=).
func (a *adminAPI) rejectedEvents(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if s := q.Get("limit"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 || limit > 1000 {
			return fmt.Errorf("%w: limit must be 1 to 1000", ops.ErrBadRequest)
		}
	}
	if p := textcheck.Problem(q.Get("before")); p != "" {
		return fmt.Errorf("%w: before %q %s", ops.ErrBadRequest, q.Get("before"), p)
	}
	f := inbound.RejectedFilter{Limit: cmp.Or(limit, 100), Before: q.Get("before")}
	evs, err := a.rejected.List(r.Context(), f)
	if err != nil {
		return err
	}
	resp := rejectedResponse{Rejected: evs}
	if len(evs) == f.Limit {
		resp.Next = evs[len(evs)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// deadLettersResponse is the answer of GET /admin/deadletters.
type deadLettersResponse struct {
	DeadLetters []ops.DeadLetter `json:"dead_letters"`
	// Next is the after= value of the next page, empty on the last one.
	Next string `json:"next,omitempty"`
}

func (a *adminAPI) deadLetters(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	dir, err := ops.ParseDirection(cmp.Or(q.Get("direction"), string(store.DirectionOutbound))) // as hubsync dlq
	if err != nil {
		return err
	}
	limit := 0
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return fmt.Errorf("%w: limit must be a positive number", ops.ErrBadRequest)
		}
	}
	dls, err := ops.ListDeadLetters(r.Context(), a.st, ops.DeadLetterQuery{Direction: dir, Key: q.Get("key"), Limit: limit, After: q.Get("after")})
	if err != nil {
		return err
	}
	resp := deadLettersResponse{DeadLetters: dls}
	if n := len(dls); n > 0 && n == min(cmp.Or(limit, ops.DeadLetterLimitDefault), ops.DeadLetterLimitMax) {
		resp.Next = dls[n-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (a *adminAPI) retry(w http.ResponseWriter, r *http.Request) error {
	var req ops.RetryRequest
	if err := decodeBody(w, r, &req); err != nil {
		return err
	}
	req.Direction = cmp.Or(req.Direction, store.DirectionOutbound) // as GET and hubsync dlq
	// Which ids the retry leaves alone, and why, read before it runs; best
	// effort: ids the retry refuses (bad text, too many) get its 400.
	var skipped []string
	if len(req.IDs) > 0 && len(req.IDs) <= ops.DiscardIDsMax {
		skipped, _ = ops.NotDeadLetters(r.Context(), a.st, req.Direction, req.IDs)
	}
	res, err := ops.RetryDeadLetters(r.Context(), a.st, req)
	if err != nil {
		return err
	}
	a.log.Info("admin: dead letters re-queued", "direction", req.Direction, "key", req.Key, "ids", len(req.IDs), "all", req.All, "requeued", res.Requeued)
	writeJSON(w, http.StatusOK, struct {
		ops.RetryResult
		// NotDeadLetters says, for each id that was not a dead letter of
		// the direction's queue, where it is.
		NotDeadLetters []string `json:"not_dead_letters,omitempty"`
	}{res, skipped})
	return nil
}

func (a *adminAPI) reconcile(w http.ResponseWriter, r *http.Request) error {
	var req ops.ReconcileRequest
	if err := decodeOptionalBody(w, r, &req); err != nil {
		return err
	}
	if req.OlderThan == "" {
		req.OlderThan = a.reconcileAfter.String()
	}
	res, err := ops.Repair(r.Context(), a.st, req, a.sched)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// errEmptyBody is decodeBody's answer to a body with nothing in it.
var errEmptyBody = errors.New("the body is empty")

// decodeOptionalBody is decodeBody for a route whose body may be left out:
// an empty body, with a length of 0 or sent chunked, leaves v as it is.
func decodeOptionalBody(w http.ResponseWriter, r *http.Request, v any) error {
	if r.ContentLength == 0 {
		return nil
	}
	if err := decodeBody(w, r, v); err != nil && !errors.Is(err, errEmptyBody) {
		return err
	}
	return nil
}

func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	// A declared size over the limit is refused before the body is read, so a
	// client waiting on `Expect: 100-continue` is told 413 without being asked
	// to send it.
	if r.ContentLength > adminBodyMax {
		return fmt.Errorf("%w: the body exceeds %d bytes", errBodyTooLarge, adminBodyMax)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, adminBodyMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return fmt.Errorf("%w: the body exceeds %d bytes", errBodyTooLarge, adminBodyMax)
		}
		if err == io.EOF {
			return fmt.Errorf("%w: %w; send a JSON object", ops.ErrBadRequest, errEmptyBody)
		}
		return fmt.Errorf("%w: body: %v", ops.ErrBadRequest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: body has data after the JSON object", ops.ErrBadRequest)
	}
	return nil
}

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
