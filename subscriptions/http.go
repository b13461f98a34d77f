package subscriptions

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/hubsync/hubsync/internal/httpjson"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/mapping"
)

// The routes of the API, under the records API's /api/ prefix.
const (
	RequestsPath = "/api/subscription-requests"
)

// IdempotencyKeyHeader is the request header naming a write's idempotency key.
const IdempotencyKeyHeader = "Idempotency-Key"

// ReplayedHeader is set to "true" on the answer to a retried request.
const ReplayedHeader = "Idempotent-Replayed"

// HandlerConfig configures the API.
type HandlerConfig struct {
	// Store holds the requests; required.
	Store *Store
	// Mapping maps (brand, product) to HubSpot subscriptions; required.
	Mapping *mapping.Set
	// Logger receives server-side errors; default slog.Default().
	Logger *slog.Logger
	// OnAccept is called after a new request was stored (e.g. to wake the
	// outbound worker); optional.
	OnAccept func()
}

// Handler serves the subscription-requests API:
//
//	POST /api/subscription-requests   {"brand_id", "product_id", "contact_key", "desired_state"}
//	     header Idempotency-Key (required)  → 201 request; a retry → 200 the same request
//	GET  /api/subscription-requests/{id}    → {"id", "sync_status", "applied_sequence", ...}
//
// Errors are {"error": "..."}: 400 for a missing Idempotency-Key or an invalid
// body, 404 for an unknown id, 409 for a key reused with another body, 413
// for a body over MaxBodyBytes, 422 for a (brand_id, product_id) the mapping
// does not know.
type Handler struct {
	cfg HandlerConfig
	mux *http.ServeMux
}

// NewHandler returns the API.
func NewHandler(cfg HandlerConfig) (*Handler, error) {
	if cfg.Store == nil || cfg.Mapping == nil {
		return nil, errors.New("subscriptions: HandlerConfig.Store and Mapping are required")
	}
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	h := &Handler{cfg: cfg, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST "+RequestsPath, h.serveSubmit)
	h.mux.HandleFunc(RequestsPath, methodNotAllowed("POST"))
	h.mux.HandleFunc("GET "+RequestsPath+"/{id}", h.serveGet)
	h.mux.HandleFunc(RequestsPath+"/{id}", methodNotAllowed("GET"))
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *Handler) serveSubmit(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get(IdempotencyKeyHeader)
	if key == "" {
		httpjson.Error(w, http.StatusBadRequest, "the Idempotency-Key header is required: send a unique key per request (e.g. a UUID) and the same key on retries")
		return
	}
	if len(key) > MaxIdempotencyKeyLength {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("the Idempotency-Key header is longer than %d characters", MaxIdempotencyKeyLength))
		return
	}
	if p := textcheck.Problem(key); p != "" {
		httpjson.Error(w, http.StatusBadRequest, "the Idempotency-Key header "+p+"; send printable text, e.g. a UUID")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if len(body) > MaxBodyBytes {
		httpjson.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", MaxBodyBytes))
		return
	}
	req, err := ParseRequest(body)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, err.Error())
		return
	}
	var res SubmitResult
	if _, ok := h.cfg.Mapping.Subscription(req.BrandID, req.ProductID); ok {
		res, err = h.cfg.Store.Submit(r.Context(), req, key, h.cfg.Mapping.SubscriptionsVersion())
	} else if res, ok, err = h.cfg.Store.Replay(r.Context(), req, key); err == nil && !ok {
		// Not mapped, and not a retry of a request accepted before the
		// mapping changed.
		httpjson.Error(w, http.StatusUnprocessableEntity, fmt.Sprintf("brand_id %q with product_id %q is not mapped to a HubSpot subscription; add it to the subscriptions: list of the mapping file", req.BrandID, req.ProductID))
		return
	}
	switch {
	case errors.Is(err, ErrConflict):
		httpjson.Error(w, http.StatusConflict, err.Error())
	case err != nil:
		h.cfg.Logger.Error("subscriptions: submit", "err", err)
		httpjson.Error(w, http.StatusInternalServerError, "internal error")
	case res.Replayed:
		w.Header().Set(ReplayedHeader, "true")
		httpjson.Write(w, http.StatusOK, res.Stored)
	default:
		if h.cfg.OnAccept != nil {
			h.cfg.OnAccept()
		}
		w.Header().Set("Location", RequestsPath+"/"+res.ID)
		httpjson.Write(w, http.StatusCreated, res.Stored)
	}
}

func (h *Handler) serveGet(w http.ResponseWriter, r *http.Request) {
	if textcheck.Problem(r.PathValue("id")) != "" {
		httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("no subscription request %q", r.PathValue("id")))
		return
	}
	got, err := h.cfg.Store.Get(r.Context(), r.PathValue("id"))
	switch {
	case errors.Is(err, ErrNotFound):
		httpjson.Error(w, http.StatusNotFound, "no subscription request "+r.PathValue("id")+
			" (a synced or superseded request is deleted HUBSYNC_SUBSCRIPTION_RETENTION after its last change, 30 days by default, unless it is its contact's newest)")
	case err != nil:
		h.cfg.Logger.Error("subscriptions: get", "err", err)
		httpjson.Error(w, http.StatusInternalServerError, "internal error")
	default:
		httpjson.Write(w, http.StatusOK, got)
	}
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		httpjson.Error(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use %s", r.Method, allow))
	}
}
