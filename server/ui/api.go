package ui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/httpjson"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/store"
)

// errTooLarge answers 413.
var errTooLarge = errors.New("request body too large")

// errUnsupported answers 415.
var errUnsupported = errors.New("unsupported media type")

// statusError answers its status with its code.
type statusError struct {
	status int
	code   string
	msg    string
}

func (e *statusError) Error() string { return e.msg }

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	httpjson.Write(w, status, errorBody{Error: code, Message: msg})
}

// json runs h and answers its error: 400 for a bad request, 413 for a body
// too large, 415 for a body that is not JSON, 500 (logged) for the rest.
func (u *UI) json(h func(w http.ResponseWriter, r *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		var se *statusError
		switch {
		case errors.As(err, &se):
			writeError(w, se.status, se.code, se.msg)
		case errors.Is(err, errTooLarge):
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", err.Error())
		case errors.Is(err, errUnsupported):
			writeError(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
		case errors.Is(err, ops.ErrBadRequest):
			writeError(w, http.StatusBadRequest, "bad_request", err.Error())
		case errors.Is(err, context.Canceled):
		default:
			u.log.Error("ui: request failed", "path", r.URL.Path, "err", err)
			writeError(w, http.StatusInternalServerError, "internal", "the request failed; see the service log")
		}
	}
}

func badRequest(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ops.ErrBadRequest}, a...)...)
}

// decodeJSON reads one JSON object of at most JSONBodyMax bytes, no unknown
// fields, nothing after it.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) error {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return errUnsupported
	}
	if r.ContentLength > JSONBodyMax {
		return fmt.Errorf("%w: the body exceeds %d bytes", errTooLarge, JSONBodyMax)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, JSONBodyMax))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return fmt.Errorf("%w: the body exceeds %d bytes", errTooLarge, JSONBodyMax)
		}
		return badRequest("body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return badRequest("body has data after the JSON object")
	}
	return nil
}

// checkText refuses a parameter that is too long or holds control characters.
func checkText(name, v string, max int) error {
	if len(v) > max {
		return badRequest("%s has %d bytes; at most %d", name, len(v), max)
	}
	for _, c := range v {
		if unicode.IsControl(c) || c == unicode.ReplacementChar {
			return badRequest("%s holds a control or invalid character", name)
		}
	}
	return nil
}

// overviewResponse is the answer of GET api/overview.
type overviewResponse struct {
	ops.Metrics
	Budget      *budget.WindowUse `json:"budget,omitempty"`
	BudgetError string            `json:"budget_error,omitempty"`
	Activity    ActivitySnapshot  `json:"activity"`
}

var overviewSeries = []string{SeriesProcessedInbound, SeriesProcessedOutbound, SeriesHubSpotCalls, SeriesHubSpot429, SeriesWebhookSigFailed, SeriesBudgetDenied}

func (u *UI) overview(w http.ResponseWriter, r *http.Request) error {
	m, err := u.cfg.Metrics(r.Context())
	if err != nil {
		return err
	}
	if m.Queues == nil {
		m.Queues = []ops.QueueMetrics{}
	}
	resp := overviewResponse{Metrics: m, Activity: u.cfg.Activity.Snapshot(overviewSeries...)}
	if u.cfg.BudgetUse != nil {
		if bu, err := u.cfg.BudgetUse(r.Context(), u.cfg.BudgetKey); err != nil {
			resp.BudgetError = err.Error()
		} else {
			resp.Budget = &bu
		}
	}
	httpjson.Write(w, http.StatusOK, resp)
	return nil
}

// WouldSend is what the outbound worker would send for an outbound dead letter.
type WouldSend struct {
	// Action is "upsert" (create or update) or "archive".
	Action      string            `json:"action"`
	HubSpotType string            `json:"hubspot_type"`
	Properties  map[string]string `json:"properties,omitempty"`
	// Skipped explains why no call would be made (an echo of HubSpot's own change).
	Skipped string `json:"skipped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// deadLetterView is a dead letter as the dashboard shows it.
type deadLetterView struct {
	ops.DeadLetter
	WouldSend *WouldSend `json:"would_send,omitempty"`
}

type deadLettersResponse struct {
	DeadLetters []deadLetterView `json:"dead_letters"`
	Next        string           `json:"next,omitempty"`
}

func (u *UI) search(q map[string][]string) (ops.DeadLetterSearch, error) {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	dir, err := ops.ParseDirection(get("direction"))
	if err != nil {
		return ops.DeadLetterSearch{}, err
	}
	s := ops.DeadLetterSearch{Direction: dir, Key: get("key"), ObjectType: get("object_type"), ErrorContains: get("error"), After: get("after")}
	for _, c := range []struct {
		name, v string
		max     int
	}{{"key", s.Key, 255}, {"object_type", s.ObjectType, 100}, {"error", s.ErrorContains, 200}, {"after", s.After, 64}} {
		if err := checkText(c.name, c.v, c.max); err != nil {
			return ops.DeadLetterSearch{}, err
		}
	}
	if l := get("limit"); l != "" {
		if s.Limit, err = strconv.Atoi(l); err != nil || s.Limit < 1 || s.Limit > ops.DeadLetterLimitMax {
			return ops.DeadLetterSearch{}, badRequest("limit must be 1 to %d", ops.DeadLetterLimitMax)
		}
	}
	return s, nil
}

func (u *UI) deadLetters(w http.ResponseWriter, r *http.Request) error {
	s, err := u.search(r.URL.Query())
	if err != nil {
		return err
	}
	page, err := ops.SearchDeadLetters(r.Context(), u.cfg.Store, s)
	if err != nil {
		return err
	}
	resp := deadLettersResponse{DeadLetters: make([]deadLetterView, len(page.DeadLetters)), Next: page.Next}
	for i, d := range page.DeadLetters {
		resp.DeadLetters[i] = deadLetterView{DeadLetter: d}
		if d.Direction == store.DirectionOutbound {
			resp.DeadLetters[i].WouldSend = u.wouldSend(d)
		}
	}
	httpjson.Write(w, http.StatusOK, resp)
	return nil
}

// wouldSend maps an outbound dead letter's snapshot as the outbound worker
// would: the mapped properties of an upsert, or an archive.
func (u *UI) wouldSend(d ops.DeadLetter) *WouldSend {
	o, ok := u.cfg.Mapping.Lookup(d.ObjectType)
	if !ok {
		return &WouldSend{Error: "no mapping for object type " + d.ObjectType}
	}
	ws := &WouldSend{Action: "upsert", HubSpotType: o.HubSpotType}
	if d.EventType == store.EventDelete {
		ws.Action = "archive"
		return ws
	}
	snap, err := outbox.ParseSnapshot(d.Payload)
	if err != nil || snap == nil {
		ws.Error = "the payload is not a record snapshot"
		return ws
	}
	if snap.SyncSourced(d.Key) {
		ws.Skipped = "the change came from " + d.Key + " itself; it would complete without a call"
	}
	if ws.Properties, err = o.ToHubSpot(snap.Fields); err != nil {
		ws.Error = err.Error()
	}
	return ws
}

// retryRequest is the body of POST api/deadletters/retry: ids, or all the
// dead letters matching the filter.
type retryRequest struct {
	Direction  store.Direction `json:"direction"`
	IDs        []string        `json:"ids,omitempty"`
	All        bool            `json:"all,omitempty"`
	Key        string          `json:"key,omitempty"`
	ObjectType string          `json:"object_type,omitempty"`
	Error      string          `json:"error,omitempty"`
}

func (u *UI) retry(w http.ResponseWriter, r *http.Request) error {
	var req retryRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var res ops.RetryResult
	var err error
	switch {
	case req.All && len(req.IDs) > 0:
		return badRequest("give either ids or all, not both")
	case req.All:
		s, err := u.search(map[string][]string{"direction": {string(req.Direction)}, "key": {req.Key}, "object_type": {req.ObjectType}, "error": {req.Error}})
		if err != nil {
			return err
		}
		res, err = ops.RetryMatching(r.Context(), u.cfg.Store, s)
		if err != nil {
			return err
		}
	default:
		if len(req.IDs) > ops.DiscardIDsMax {
			return badRequest("%d ids; retry at most %d at once, or all matching", len(req.IDs), ops.DiscardIDsMax)
		}
		for _, id := range req.IDs {
			if err := checkText("id", id, 64); err != nil {
				return err
			}
		}
		if res, err = ops.RetryDeadLetters(r.Context(), u.cfg.Store, ops.RetryRequest{Direction: req.Direction, IDs: req.IDs}); err != nil {
			return err
		}
	}
	u.log.Info("ui: dead letters re-queued", "direction", req.Direction, "ids", len(req.IDs), "all", req.All, "requeued", res.Requeued)
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

func (u *UI) discard(w http.ResponseWriter, r *http.Request) error {
	var req ops.DiscardRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	res, err := ops.DiscardDeadLetters(r.Context(), u.cfg.Store, req)
	if err != nil {
		return err
	}
	u.log.Info("ui: dead letters discarded", "direction", req.Direction, "ids", len(req.IDs), "discarded", res.Discarded, "reason", req.Reason)
	httpjson.Write(w, http.StatusOK, res)
	return nil
}

// discardedShown is how many discarded dead letters the dead-letter page lists.
const discardedShown = 20

func (u *UI) discarded(w http.ResponseWriter, r *http.Request) error {
	ds, err := ops.ListDiscarded(r.Context(), u.cfg.Store, discardedShown)
	if err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"discarded": ds})
	return nil
}

// recordResponse is the answer of GET api/record.
type recordResponse struct {
	ObjectType string `json:"object_type"`
	ID         string `json:"id"`
	Found      bool   `json:"found"`
	// Version, Fields and the dates are the local record's, when found.
	Version   int64          `json:"version,omitempty"`
	Fields    map[string]any `json:"fields,omitempty"`
	CreatedAt *time.Time     `json:"created_at,omitempty"`
	UpdatedAt *time.Time     `json:"updated_at,omitempty"`
	// HubSpotID is the link's HubSpot id, empty when the record is not linked.
	HubSpotID         string            `json:"hubspot_id,omitempty"`
	HubSpotType       string            `json:"hubspot_type"`
	Mapping           []mapping.Field   `json:"mapping"`
	HubSpotConfigured bool              `json:"hubspot_configured"`
	Inbound           []ops.RecordEvent `json:"inbound"`
	Outbound          []ops.RecordEvent `json:"outbound"`
}

// recordParams reads ?type= and ?id= (the local id) or ?hubspot_id=.
func (u *UI) recordParams(r *http.Request) (mapping.Object, string, string, error) {
	q := r.URL.Query()
	typ, id, hsID := q.Get("type"), q.Get("id"), q.Get("hubspot_id")
	o, ok := u.cfg.Mapping.Lookup(typ)
	if !ok {
		return o, "", "", badRequest("type %q is not a mapped object type; use one of %s", truncate(typ, 40), strings.Join(u.cfg.Mapping.ObjectTypes(), ", "))
	}
	if (id == "") == (hsID == "") {
		return o, "", "", badRequest("give the local id (id=) or the HubSpot id (hubspot_id=), one of them")
	}
	if err := checkText("id", id+hsID, 255); err != nil {
		return o, "", "", err
	}
	if strings.HasSuffix(id+hsID, " ") {
		// No id ends in a space; MariaDB would match the id without it.
		return o, "", "", &statusError{http.StatusNotFound, "not_found", fmt.Sprintf("no %s record has the id %q (ids never end in a space)", o.ObjectType, id+hsID)}
	}
	return o, id, hsID, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (u *UI) record(w http.ResponseWriter, r *http.Request) error {
	o, id, hsID, err := u.recordParams(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if u.cfg.Records == nil || u.cfg.Links == nil {
		return &statusError{http.StatusNotFound, "records_off", "the records service is off in this process"}
	}
	if id == "" {
		rid, ok, err := u.cfg.Links.LookupRecord(ctx, KeyDefault, o.ObjectType, hsID)
		if err != nil {
			return err
		}
		if !ok {
			return &statusError{http.StatusNotFound, "not_linked", "no local record is linked to HubSpot id " + hsID}
		}
		id = rid
	}
	resp := recordResponse{ObjectType: o.ObjectType, ID: id, HubSpotType: o.HubSpotType, Mapping: o.Fields, HubSpotConfigured: u.cfg.HubSpot != nil}
	rec, err := u.cfg.Records.Get(ctx, o.ObjectType, id)
	switch {
	case errors.Is(err, records.ErrNotFound):
	case err != nil:
		return err
	default:
		resp.Found, resp.Version, resp.Fields = true, rec.Version, rec.Fields
		resp.CreatedAt, resp.UpdatedAt = &rec.CreatedAt, &rec.UpdatedAt
	}
	if resp.HubSpotID, _, err = u.cfg.Links.Lookup(ctx, KeyDefault, o.ObjectType, id); err != nil {
		return err
	}
	if resp.Inbound, resp.Outbound, err = ops.RecordEvents(ctx, u.cfg.Store, ops.RecordEventsQuery{
		Key: KeyDefault, ObjectType: o.ObjectType, RecordID: id, ExternalID: resp.HubSpotID,
	}); err != nil {
		return err
	}
	httpjson.Write(w, http.StatusOK, resp)
	return nil
}

// hubspotResponse is the answer of POST api/record/hubspot.
type hubspotResponse struct {
	HubSpotID  string            `json:"hubspot_id"`
	Properties map[string]string `json:"properties"`
	Archived   bool              `json:"archived"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

// recordHubSpot reads the record's HubSpot object, one call reserved from the
// shared budget first: a read on demand never pushes the workers over the limit.
func (u *UI) recordHubSpot(w http.ResponseWriter, r *http.Request) error {
	o, id, hsID, err := u.recordParams(r)
	if err != nil {
		return err
	}
	if u.cfg.HubSpot == nil || u.cfg.Budget == nil {
		return &statusError{http.StatusServiceUnavailable, "hubspot_off", "no HubSpot client in this process (its workers are off)"}
	}
	ctx := r.Context()
	if hsID == "" {
		if u.cfg.Links == nil {
			return &statusError{http.StatusNotFound, "records_off", "the records service is off in this process"}
		}
		var ok bool
		if hsID, ok, err = u.cfg.Links.Lookup(ctx, KeyDefault, o.ObjectType, id); err != nil {
			return err
		}
		if !ok {
			return &statusError{http.StatusNotFound, "not_linked", "this record has no HubSpot id yet"}
		}
	}
	res, err := u.cfg.Budget.Reserve(ctx, u.cfg.BudgetKey, 1)
	if err != nil {
		return err
	}
	if !res.Granted {
		w.Header().Set("Retry-After", strconv.Itoa(int(res.RetryAfter.Seconds())+1))
		return &statusError{http.StatusTooManyRequests, "budget_exhausted", fmt.Sprintf("the HubSpot budget is used up; try again in %s", res.RetryAfter.Round(time.Second))}
	}
	obj, err := u.cfg.HubSpot.Get(ctx, hubspot.ObjectType(o.HubSpotType), hsID, o.HubSpotProperties())
	if errors.Is(err, hubspot.ErrNotFound) {
		return &statusError{http.StatusNotFound, "hubspot_not_found", "HubSpot has no object " + hsID + " (deleted or merged away?)"}
	}
	if err != nil {
		return &statusError{http.StatusBadGateway, "hubspot_error", "HubSpot: " + err.Error()}
	}
	httpjson.Write(w, http.StatusOK, hubspotResponse{HubSpotID: obj.ID, Properties: obj.Properties, Archived: obj.Archived, UpdatedAt: obj.UpdatedAt})
	return nil
}
