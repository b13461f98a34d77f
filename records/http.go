package records

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/hubsync/hubsync/internal/httpjson"
	"github.com/hubsync/hubsync/internal/logtext"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/mapping"
)

// MaxBodyBytes bounds an API request body; a larger one answers 413.
const MaxBodyBytes = 1 << 20

// errBadRequest marks a request the client must fix (malformed JSON, wrong types).
var errBadRequest = errors.New("bad request")

// recordJSON is how a record travels over the API.
type recordJSON struct {
	ID      string         `json:"id"`
	Version int64          `json:"version"`
	Fields  map[string]any `json:"fields"`
	// UnsyncedFields are the fields the mapping does not send to HubSpot,
	// sorted; absent without Config.Mapping.
	UnsyncedFields *[]string `json:"unsynced_fields,omitempty"`
}

// Handler serves the JSON API:
//
//	GET    /api/records/{objectType}?limit=N&after=ID  → {"records": [...], "next": "ID"}
//	POST   /api/records/{objectType}       {"fields": {...}}              → 201 record
//	GET    /api/records/{objectType}/{id}                                 → record
//	PATCH  /api/records/{objectType}/{id}  {"version": N, "fields": {...}} → record
//	DELETE /api/records/{objectType}/{id}?version=N                       → 204
//
// A record is {"id": "...", "version": 3, "fields": {...}}, plus, with
// Config.Mapping, "unsynced_fields": the fields the mapping does not send to
// HubSpot. PATCH merges the given fields; a field set to null is removed.
// Errors are {"error": "..."}: 400 for malformed JSON, wrong types, unknown
// keys, invalid names, invalid UTF-8 or a NUL character, 404 for a missing
// record or unknown object type, 405 for a wrong method, 409 for a stale version,
// 413 for a body over MaxBodyBytes or fields over the record limit. A failed
// request writes nothing.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/records/{objectType}", s.serveList)
	mux.HandleFunc("POST /api/records/{objectType}", s.serveCreate)
	mux.HandleFunc("/api/records/{objectType}", methodNotAllowed("GET, POST"))
	mux.HandleFunc("GET /api/records/{objectType}/{id}", s.serveGet)
	mux.HandleFunc("PATCH /api/records/{objectType}/{id}", s.servePatch)
	mux.HandleFunc("DELETE /api/records/{objectType}/{id}", s.serveDelete)
	mux.HandleFunc("/api/records/{objectType}/{id}", methodNotAllowed("GET, PATCH, DELETE"))
	return mux
}

func methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		httpjson.Error(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed; use %s", r.Method, allow))
	}
}

func (s *Service) serveList(w http.ResponseWriter, r *http.Request) {
	opts := ListOptions{After: r.URL.Query().Get("after")}
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > ListLimitMax {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("limit %q: use a number from 1 to %d", v, ListLimitMax))
			return
		}
		opts.Limit = n
	}
	recs, err := s.List(r.Context(), r.PathValue("objectType"), opts)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := struct {
		Records []recordJSON `json:"records"`
		Next    string       `json:"next,omitempty"`
	}{Records: make([]recordJSON, 0, len(recs))}
	for _, rec := range recs {
		out.Records = append(out.Records, s.toJSON(rec))
	}
	if len(recs) > 0 && len(recs) == cmp.Or(opts.Limit, ListLimitDefault) {
		out.Next = recs[len(recs)-1].ID
	}
	httpjson.Write(w, http.StatusOK, out)
}

func (s *Service) serveCreate(w http.ResponseWriter, r *http.Request) {
	if tooLarge(w, r) {
		return
	}
	fields, err := decodeCreate(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	rec, err := s.Insert(r.Context(), r.PathValue("objectType"), fields)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/records/"+rec.ObjectType+"/"+rec.ID)
	httpjson.Write(w, http.StatusCreated, s.toJSON(rec))
}

func (s *Service) serveGet(w http.ResponseWriter, r *http.Request) {
	rec, err := s.Get(r.Context(), r.PathValue("objectType"), r.PathValue("id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, s.toJSON(rec))
}

func (s *Service) servePatch(w http.ResponseWriter, r *http.Request) {
	if tooLarge(w, r) {
		return
	}
	version, fields, err := decodePatch(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	rec, err := s.Update(r.Context(), r.PathValue("objectType"), r.PathValue("id"), version, fields)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusOK, s.toJSON(rec))
}

func (s *Service) serveDelete(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query().Get("version")
	version, err := strconv.ParseInt(v, 10, 64)
	if err != nil || version < 1 {
		httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("version %q: DELETE needs ?version=N, the version you read (a positive integer)", v))
		return
	}
	if err := s.Delete(r.Context(), r.PathValue("objectType"), r.PathValue("id"), version); err != nil {
		s.writeErr(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// tooLarge answers 413 when the declared body exceeds MaxBodyBytes, before it
// is read: a client sending `Expect: 100-continue` is not asked for it.
func tooLarge(w http.ResponseWriter, r *http.Request) bool {
	if r.ContentLength <= MaxBodyBytes {
		return false
	}
	httpjson.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBodyBytes))
	return true
}

// decodeCreate parses a POST body, {"fields": {...}}. Unknown keys, trailing
// data and non-object fields are refused with an error matching errBadRequest;
// a body over the reader's limit with one wrapping *http.MaxBytesError.
func decodeCreate(body io.Reader) (map[string]any, error) {
	var req struct {
		Fields *map[string]any `json:"fields"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	if req.Fields == nil || *req.Fields == nil {
		return nil, fmt.Errorf("%w: body needs \"fields\", an object", errBadRequest)
	}
	return *req.Fields, nil
}

// decodePatch parses a PATCH body, {"version": N, "fields": {...}}; a field
// whose value is null is returned with a nil value (remove it).
func decodePatch(body io.Reader) (int64, map[string]any, error) {
	var req struct {
		Version *int64          `json:"version"`
		Fields  *map[string]any `json:"fields"`
	}
	if err := decodeStrict(body, &req); err != nil {
		return 0, nil, err
	}
	if req.Version == nil {
		return 0, nil, fmt.Errorf("%w: body needs \"version\", the version you read", errBadRequest)
	}
	if *req.Version < 1 {
		return 0, nil, fmt.Errorf("%w: \"version\" is %d; use the positive version you read", errBadRequest, *req.Version)
	}
	if req.Fields == nil || *req.Fields == nil {
		return 0, nil, fmt.Errorf("%w: body needs \"fields\", an object", errBadRequest)
	}
	return *req.Version, *req.Fields, nil
}

func decodeStrict(body io.Reader, v any) error {
	// encoding/json replaces invalid UTF-8 with U+FFFD without a word: check
	// the bytes first, so that a client learns its text was not stored as sent.
	raw, err := io.ReadAll(body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		return fmt.Errorf("%w: could not read the body: %v", errBadRequest, err)
	}
	if !utf8.Valid(raw) {
		return fmt.Errorf("%w: the body is not valid UTF-8", errBadRequest)
	}
	if p := textcheck.JSONProblem(raw); p != "" {
		return fmt.Errorf("%w: the body %s", errBadRequest, p)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: empty body; send a JSON object", errBadRequest)
		}
		return fmt.Errorf("%w: %v", errBadRequest, err)
	}
	// Exactly one JSON value: anything after it but white space is refused.
	var rest json.RawMessage
	switch err := dec.Decode(&rest); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return err
		}
	}
	return fmt.Errorf("%w: trailing data after the JSON object", errBadRequest)
}

func (s *Service) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	var conflict *ConflictError
	switch {
	case errors.As(err, &tooBig):
		httpjson.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", tooBig.Limit))
	case errors.Is(err, errBadRequest), errors.Is(err, ErrInvalid):
		httpjson.Error(w, http.StatusBadRequest, err.Error())
	case errors.Is(err, ErrTooLarge):
		httpjson.Error(w, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrUnknownObjectType):
		httpjson.Error(w, http.StatusNotFound, err.Error())
	case errors.As(err, &conflict):
		httpjson.Write(w, http.StatusConflict, map[string]any{"error": err.Error(), "current_version": conflict.Current})
	case errors.Is(err, ErrConflict), errors.Is(err, ErrEmailTaken):
		httpjson.Error(w, http.StatusConflict, err.Error())
	default:
		if r.Context().Err() == nil {
			s.log.ErrorContext(r.Context(), "records API", slog.String("method", r.Method), slog.String("path", logtext.URI(r.URL.Path)), slog.Any("error", err))
		}
		httpjson.Error(w, http.StatusInternalServerError, "internal error")
	}
}

func (s *Service) toJSON(r Record) recordJSON {
	f := r.Fields
	if f == nil {
		f = map[string]any{}
	}
	out := recordJSON{ID: r.ID, Version: r.Version, Fields: f}
	if s.cfg.Mapping != nil {
		u := unsyncedFields(s.cfg.Mapping, r.ObjectType, f)
		out.UnsyncedFields = &u
	}
	return out
}

// unsyncedFields returns the fields of a record of objectType that m does not
// send to HubSpot: unmapped ones and those mapped from_hubspot only. The
// IDField, which the upsert is keyed by, counts as sent.
func unsyncedFields(m *mapping.Set, objectType string, fields map[string]any) []string {
	out := []string{}
	o, ok := m.Lookup(objectType)
	for k := range fields {
		sent := ok && k == o.IDField
		if ok && !sent {
			for _, f := range o.Fields {
				if f.Local == k && f.Direction != mapping.FromHubSpot {
					sent = true
					break
				}
			}
		}
		if !sent {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
