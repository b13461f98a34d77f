package hubspot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// ObjectType names a CRM object type in URLs: one of the constants below, a
// custom object's "2-123456" type id, or its fully qualified name ("p_cars").
type ObjectType string

// Standard CRM object types.
const (
	Contacts  ObjectType = "contacts"
	Companies ObjectType = "companies"
	Deals     ObjectType = "deals"
)

// Limits HubSpot enforces and the client checks before sending.
const (
	// MaxBatchInputs is the most inputs a batch endpoint accepts.
	MaxBatchInputs = 100
	// SearchLimitMax is the largest page a search returns.
	SearchLimitMax = 200
)

// Client-side rejections, returned before any request is sent.
var (
	// ErrBatchTooLarge means more than MaxBatchInputs inputs were passed.
	ErrBatchTooLarge = errors.New("hubspot: batch exceeds 100 inputs")
	// ErrInvalidArgument means an argument is empty or out of range.
	ErrInvalidArgument = errors.New("hubspot: invalid argument")
)

// Object is a CRM record as HubSpot returns it.
type Object struct {
	// ID is HubSpot's record id (hs_object_id).
	ID string
	// Properties holds the requested properties; HubSpot's null is "".
	Properties map[string]string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	Archived   bool
	// New is set by batch upsert: true when the record was created.
	New bool
	// ObjectWriteTraceID is set when HubSpot echoes an input's trace id in a
	// result (not guaranteed by HubSpot; map results by ID or property otherwise).
	ObjectWriteTraceID string
	// History holds, for a read that asked for propertiesWithHistory, each
	// such property's versions, newest first (see BatchReadWithHistory).
	History map[string][]PropertyVersion
}

// AdditionalEmailsProperty is the contact property that lists, separated by
// ";", the emails a contact has besides its own: those of the contacts
// merged into it, and addresses added by hand. HubSpot finds the contact by
// any of them, so an upsert by one writes over it.
const AdditionalEmailsProperty = "hs_additional_emails"

// AdditionalEmails returns the emails of o's AdditionalEmailsProperty,
// trimmed, without blanks; none when it was not read.
func (o *Object) AdditionalEmails() []string {
	return o.list(AdditionalEmailsProperty)
}

// MergedObjectIDsProperty is the property that lists, separated by ";", the
// ids of the objects merged into an object: by every merge it survived, and
// those merged into an object before that object was merged into it.
const MergedObjectIDsProperty = "hs_merged_object_ids"

// MergedObjectIDs returns the ids of o's MergedObjectIDsProperty, trimmed,
// without blanks; none when it was not read.
func (o *Object) MergedObjectIDs() []string {
	return o.list(MergedObjectIDsProperty)
}

// list returns the items of o's ";"-separated property name, trimmed,
// without blanks.
func (o *Object) list(name string) []string {
	var out []string
	for _, v := range strings.Split(o.Properties[name], ";") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// wireObject is Object as JSON, parsed leniently.
type wireObject struct {
	ID                 json.RawMessage            `json:"id"`
	Properties         map[string]json.RawMessage `json:"properties"`
	CreatedAt          string                     `json:"createdAt"`
	UpdatedAt          string                     `json:"updatedAt"`
	Archived           bool                       `json:"archived"`
	New                bool                       `json:"new"`
	ObjectWriteTraceID string                     `json:"objectWriteTraceId"`
	History            map[string][]wireVersion   `json:"propertiesWithHistory"`
}

// UnmarshalJSON parses HubSpot's object shape: null property values become
// "", non-string values their JSON text, unparsable timestamps zero.
func (o *Object) UnmarshalJSON(data []byte) error {
	var w wireObject
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*o = Object{
		ID:                 flexText(w.ID),
		Archived:           w.Archived,
		New:                w.New,
		ObjectWriteTraceID: w.ObjectWriteTraceID,
		CreatedAt:          parseTime(w.CreatedAt),
		UpdatedAt:          parseTime(w.UpdatedAt),
	}
	if w.Properties != nil {
		o.Properties = make(map[string]string, len(w.Properties))
		for k, v := range w.Properties {
			o.Properties[k] = flexText(v)
		}
	}
	if w.History != nil {
		o.History = historyOf(w.History)
	}
	return nil
}

func parseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// CreateInput is one record to create.
type CreateInput struct {
	Properties map[string]string
	// ObjectWriteTraceID, unique per input, makes HubSpot report per-input
	// errors (207) that name it; see BatchResult.ErrorFor.
	ObjectWriteTraceID string
}

// UpdateInput is one record to update, by id or by a unique property.
type UpdateInput struct {
	// ID is the record id, or the IDProperty value when IDProperty is set.
	ID string
	// IDProperty names a unique property (e.g. "email"); empty means ID is hs_object_id.
	IDProperty         string
	Properties         map[string]string
	ObjectWriteTraceID string
}

// UpsertInput is one record to create or update by a unique property.
type UpsertInput struct {
	// ID is the IDProperty value, e.g. "a@b.com" with IDProperty "email".
	ID                 string
	IDProperty         string
	Properties         map[string]string
	ObjectWriteTraceID string
}

type wireInput struct {
	ID                 string            `json:"id,omitempty"`
	IDProperty         string            `json:"idProperty,omitempty"`
	Properties         map[string]string `json:"properties"`
	ObjectWriteTraceID string            `json:"objectWriteTraceId,omitempty"`
}

// BatchResult is the answer of a batch call.
//
// Mapping results to inputs: HubSpot does not promise result order. Give
// every input a unique ObjectWriteTraceID and look failures up with
// ErrorFor; successes of update and upsert carry the record ID (and, for an
// IDProperty, the property's value in Properties when it was written or
// requested), successes of create are recognised by a property you set (for
// contacts, email) or by ObjectWriteTraceID when HubSpot echoes it. Errors
// without a trace id (HubSpot reports only the first create conflict, for
// instance) leave the remaining inputs' fate unknown: re-read before retrying.
type BatchResult struct {
	// Status is HubSpot's status field, e.g. "COMPLETE".
	Status  string
	Results []Object
	Errors  []BatchError
	// NumErrors is HubSpot's count of errors (may exceed len(Errors)).
	NumErrors int
	// RateLimit holds the response's rate-limit headers.
	RateLimit RateLimit
	// Multi is true when HubSpot answered 207 Multi-Status (partial success).
	Multi bool
}

// BatchError is one per-input error of a batch answer.
type BatchError struct {
	Status      string
	Category    string
	Message     string
	SubCategory string
	Context     map[string][]string
	// ObjectWriteTraceID comes from Context["objectWriteTraceId"] when present.
	ObjectWriteTraceID string
	// ExistingID is the id named by a conflict message ("Existing ID: 123").
	ExistingID string
}

// Kind classifies the per-input error by its category, like Error.Kind.
func (b *BatchError) Kind() Kind {
	switch strings.ToUpper(b.Category) {
	case "CONFLICT":
		return KindConflict
	case "OBJECT_NOT_FOUND", "NOT_FOUND":
		return KindNotFound
	case "VALIDATION_ERROR", "PROPERTY_DOESNT_EXIST", "INVALID_EMAIL", "INVALID_PARAMS":
		return KindValidation
	case "RATE_LIMITS":
		return KindRateLimited
	case "RETRYABLE", "LOCKED", "TIMEOUT", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE":
		return KindRetryable
	}
	return KindPermanent
}

// ErrorFor returns the error reported for the input with traceID, or nil.
func (r *BatchResult) ErrorFor(traceID string) *BatchError {
	if traceID == "" {
		return nil
	}
	for i := range r.Errors {
		if r.Errors[i].ObjectWriteTraceID == traceID {
			return &r.Errors[i]
		}
	}
	return nil
}

// ResultByID returns the result with the given record id, or nil.
func (r *BatchResult) ResultByID(id string) *Object {
	for i := range r.Results {
		if r.Results[i].ID == id {
			return &r.Results[i]
		}
	}
	return nil
}

type wireBatchResult struct {
	Status    string                       `json:"status"`
	Results   []Object                     `json:"results"`
	NumErrors int                          `json:"numErrors"`
	Errors    []map[string]json.RawMessage `json:"errors"`
}

func (w *wireBatchResult) toResult(resp response) *BatchResult {
	r := &BatchResult{
		Status:    w.Status,
		Results:   w.Results,
		NumErrors: w.NumErrors,
		RateLimit: resp.rateLimit,
		Multi:     resp.status == http.StatusMultiStatus,
	}
	for _, e := range w.Errors {
		be := BatchError{
			Status:      flexText(e["status"]),
			Category:    flexText(e["category"]),
			Message:     flexText(e["message"]),
			SubCategory: flexText(e["subCategory"]),
			Context:     flexContext(e["context"]),
		}
		if ids := be.Context["objectWriteTraceId"]; len(ids) > 0 {
			be.ObjectWriteTraceID = ids[0]
		}
		be.ExistingID = findExistingID(be.Message)
		if be.ExistingID == "" {
			// Nested errors[] may carry the conflict message instead.
			var nested []map[string]json.RawMessage
			if json.Unmarshal(e["errors"], &nested) == nil {
				for _, n := range nested {
					if be.ExistingID = findExistingID(flexText(n["message"])); be.ExistingID != "" {
						break
					}
				}
			}
		}
		r.Errors = append(r.Errors, be)
	}
	if r.NumErrors < len(r.Errors) {
		r.NumErrors = len(r.Errors)
	}
	return r
}

func checkBatch(op string, n int) error {
	if n > MaxBatchInputs {
		return fmt.Errorf("%w: %s got %d inputs; split it into chunks of %d", ErrBatchTooLarge, op, n, MaxBatchInputs)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s got no inputs", ErrInvalidArgument, op)
	}
	return nil
}

func checkType(t ObjectType) error {
	if t == "" {
		return fmt.Errorf("%w: empty ObjectType", ErrInvalidArgument)
	}
	return nil
}

func objectsPath(t ObjectType, rest ...string) string {
	p := "/crm/v3/objects/" + escapePath(string(t))
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func (c *Client) batch(ctx context.Context, t ObjectType, op string, n int, body any) (*BatchResult, error) {
	return c.batchQuery(ctx, t, op, n, nil, body)
}

// batchQuery is batch with query parameters.
func (c *Client) batchQuery(ctx context.Context, t ObjectType, op string, n int, query url.Values, body any) (*BatchResult, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if err := checkBatch("batch "+op, n); err != nil {
		return nil, err
	}
	var w wireBatchResult
	resp, err := c.do(ctx, http.MethodPost, objectsPath(t, "batch", op), query, body, &w)
	if err != nil {
		return nil, err
	}
	return w.toResult(resp), nil
}

// BatchCreate creates up to MaxBatchInputs records (POST …/batch/create).
// A partial success returns Multi=true with per-input Errors and a nil error;
// a request that fails as a whole returns *Error.
func (c *Client) BatchCreate(ctx context.Context, t ObjectType, inputs []CreateInput) (*BatchResult, error) {
	in := make([]wireInput, len(inputs))
	for i, x := range inputs {
		in[i] = wireInput{Properties: nonNil(x.Properties), ObjectWriteTraceID: x.ObjectWriteTraceID}
	}
	return c.batch(ctx, t, "create", len(inputs), map[string]any{"inputs": in})
}

// read is POST …/batch/read. HubSpot answers a read that found none of its
// inputs with a plain 404 OBJECT_NOT_FOUND instead of 207: that is an answer
// (nothing there), not a failed call, so it comes back as a result without
// Results whose one Error is the 404's (Multi=true), like a read that found
// some.
func (c *Client) read(ctx context.Context, t ObjectType, n int, query url.Values, body any) (*BatchResult, error) {
	res, err := c.batchQuery(ctx, t, "read", n, query, body)
	var he *Error
	if errors.As(err, &he) && he.StatusCode == http.StatusNotFound && strings.EqualFold(he.Category, "OBJECT_NOT_FOUND") {
		return &BatchResult{
			Status:    "COMPLETE",
			Errors:    []BatchError{{Status: "error", Category: he.Category, Message: he.Message, SubCategory: he.SubCategory, Context: he.Context}},
			NumErrors: 1,
			RateLimit: he.RateLimit,
			Multi:     true,
		}, nil
	}
	return res, err
}

// BatchRead reads up to MaxBatchInputs records by id, or by idProperty
// values when idProperty is set (POST …/batch/read). Missing ids come back
// as Errors (Multi=true), not as a failed call, also when none was found.
func (c *Client) BatchRead(ctx context.Context, t ObjectType, ids []string, properties []string, idProperty string) (*BatchResult, error) {
	in := idInputs(ids)
	body := struct {
		Inputs     []idInput `json:"inputs"`
		Properties []string  `json:"properties"`
		IDProperty string    `json:"idProperty,omitempty"`
	}{in, nonNilStrings(properties), idProperty}
	return c.read(ctx, t, len(ids), nil, body)
}

// idInput is a batch read's input by id.
type idInput struct {
	ID string `json:"id"`
}

// idInputs returns the inputs of a batch read of ids.
func idInputs(ids []string) []idInput {
	in := make([]idInput, len(ids))
	for i, x := range ids {
		in[i] = idInput{x}
	}
	return in
}

// BatchReadArchived reads up to MaxBatchInputs archived (deleted) records by
// id (POST …/batch/read?archived=true): what a deleted object held, such as
// the email of a contact whose deletion names only its id. Ids that are not
// archived come back as Errors, as BatchRead's missing ids do.
func (c *Client) BatchReadArchived(ctx context.Context, t ObjectType, ids []string, properties []string) (*BatchResult, error) {
	in := idInputs(ids)
	body := struct {
		Inputs     []idInput `json:"inputs"`
		Properties []string  `json:"properties"`
	}{in, nonNilStrings(properties)}
	return c.read(ctx, t, len(ids), url.Values{"archived": {"true"}}, body)
}

// BatchUpdate updates up to MaxBatchInputs records (POST …/batch/update).
func (c *Client) BatchUpdate(ctx context.Context, t ObjectType, inputs []UpdateInput) (*BatchResult, error) {
	in := make([]wireInput, len(inputs))
	for i, x := range inputs {
		if x.ID == "" {
			return nil, fmt.Errorf("%w: batch update input %d has an empty ID", ErrInvalidArgument, i)
		}
		in[i] = wireInput{ID: x.ID, IDProperty: x.IDProperty, Properties: nonNil(x.Properties), ObjectWriteTraceID: x.ObjectWriteTraceID}
	}
	return c.batch(ctx, t, "update", len(inputs), map[string]any{"inputs": in})
}

// BatchUpsert creates or updates up to MaxBatchInputs records keyed by a
// unique property (POST …/batch/upsert). Results carry New=true for creations.
// Prefer it to search-then-create: it is idempotent and so safe to retry.
func (c *Client) BatchUpsert(ctx context.Context, t ObjectType, inputs []UpsertInput) (*BatchResult, error) {
	in := make([]wireInput, len(inputs))
	for i, x := range inputs {
		if x.ID == "" {
			return nil, fmt.Errorf("%w: batch upsert input %d has an empty ID", ErrInvalidArgument, i)
		}
		in[i] = wireInput{ID: x.ID, IDProperty: x.IDProperty, Properties: nonNil(x.Properties), ObjectWriteTraceID: x.ObjectWriteTraceID}
	}
	return c.batch(ctx, t, "upsert", len(inputs), map[string]any{"inputs": in})
}

// BatchArchive archives up to MaxBatchInputs records by id (POST …/batch/archive).
// HubSpot answers 204 even for ids that do not exist.
func (c *Client) BatchArchive(ctx context.Context, t ObjectType, ids []string) error {
	if err := checkType(t); err != nil {
		return err
	}
	if err := checkBatch("batch archive", len(ids)); err != nil {
		return err
	}
	in := idInputs(ids)
	_, err := c.do(ctx, http.MethodPost, objectsPath(t, "batch", "archive"), nil, map[string]any{"inputs": in}, nil)
	return err
}

// Get reads one record by id (GET …/{id}); properties empty means HubSpot's defaults.
func (c *Client) Get(ctx context.Context, t ObjectType, id string, properties []string) (*Object, error) {
	if err := checkTypeID(t, id); err != nil {
		return nil, err
	}
	var q url.Values
	if len(properties) > 0 {
		q = url.Values{"properties": {strings.Join(properties, ",")}}
	}
	var o Object
	if _, err := c.do(ctx, http.MethodGet, objectsPath(t, escapePath(id)), q, nil, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// Update sets properties of one record (PATCH …/{id}) and returns it.
func (c *Client) Update(ctx context.Context, t ObjectType, id string, props map[string]string) (*Object, error) {
	if err := checkTypeID(t, id); err != nil {
		return nil, err
	}
	var o Object
	if _, err := c.do(ctx, http.MethodPatch, objectsPath(t, escapePath(id)), nil, map[string]any{"properties": nonNil(props)}, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

// Archive archives one record (DELETE …/{id}).
func (c *Client) Archive(ctx context.Context, t ObjectType, id string) error {
	if err := checkTypeID(t, id); err != nil {
		return err
	}
	_, err := c.do(ctx, http.MethodDelete, objectsPath(t, escapePath(id)), nil, nil, nil)
	return err
}

// Merge merges mergeID into primaryID (POST …/merge) and returns the
// surviving record, whose id may differ from both.
func (c *Client) Merge(ctx context.Context, t ObjectType, primaryID, mergeID string) (*Object, error) {
	if err := checkTypeID(t, primaryID); err != nil {
		return nil, err
	}
	if mergeID == "" {
		return nil, fmt.Errorf("%w: empty merge id", ErrInvalidArgument)
	}
	body := map[string]string{"primaryObjectId": primaryID, "objectIdToMerge": mergeID}
	var o Object
	if _, err := c.do(ctx, http.MethodPost, objectsPath(t, "merge"), nil, body, &o); err != nil {
		return nil, err
	}
	return &o, nil
}

func checkTypeID(t ObjectType, id string) error {
	if err := checkType(t); err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%w: empty object id", ErrInvalidArgument)
	}
	return nil
}

// Filter is one search condition, e.g. {PropertyName: "email", Operator: "EQ", Value: "a@b.com"}.
// Operators: EQ, NEQ, LT, LTE, GT, GTE, BETWEEN (Value..HighValue), IN and
// NOT_IN (Values), HAS_PROPERTY, NOT_HAS_PROPERTY, CONTAINS_TOKEN, NOT_CONTAINS_TOKEN.
type Filter struct {
	PropertyName string   `json:"propertyName"`
	Operator     string   `json:"operator"`
	Value        string   `json:"value,omitempty"`
	HighValue    string   `json:"highValue,omitempty"`
	Values       []string `json:"values,omitempty"`
}

// FilterGroup ANDs its filters; the groups of a request are ORed.
type FilterGroup struct {
	Filters []Filter `json:"filters"`
}

// Sort orders search results; Direction is "ASCENDING" or "DESCENDING".
type Sort struct {
	PropertyName string `json:"propertyName"`
	Direction    string `json:"direction,omitempty"`
}

// SearchRequest is the body of POST …/search. Search has its own limit of
// about 5 requests/s, sends no rate-limit headers, stops at 10,000 results,
// and lags behind writes by "a few moments".
type SearchRequest struct {
	FilterGroups []FilterGroup `json:"filterGroups,omitempty"`
	Sorts        []Sort        `json:"sorts,omitempty"`
	Properties   []string      `json:"properties,omitempty"`
	// Query is an optional free-text query.
	Query string `json:"query,omitempty"`
	// Limit is the page size, at most SearchLimitMax; 0 means HubSpot's default (10).
	Limit int `json:"limit,omitempty"`
	// After is the paging cursor from the previous SearchResult.
	After string `json:"after,omitempty"`
}

// SearchResult is one page of search results.
type SearchResult struct {
	Total   int
	Results []Object
	// After is the cursor of the next page; "" on the last page.
	After string
}

// Search runs a CRM search (POST …/search).
func (c *Client) Search(ctx context.Context, t ObjectType, req SearchRequest) (*SearchResult, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if req.Limit < 0 || req.Limit > SearchLimitMax {
		return nil, fmt.Errorf("%w: SearchRequest.Limit %d must be between 0 and %d", ErrInvalidArgument, req.Limit, SearchLimitMax)
	}
	var w struct {
		Total   int      `json:"total"`
		Results []Object `json:"results"`
		Paging  struct {
			Next struct {
				After json.RawMessage `json:"after"`
			} `json:"next"`
		} `json:"paging"`
	}
	if _, err := c.do(ctx, http.MethodPost, objectsPath(t, "search"), nil, req, &w); err != nil {
		return nil, err
	}
	return &SearchResult{Total: w.Total, Results: w.Results, After: flexText(w.Paging.Next.After)}, nil
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// flexID accepts a JSON number or string and keeps its text.
type flexID string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexID) UnmarshalJSON(b []byte) error {
	*f = flexID(flexText(bytes.TrimSpace(b)))
	return nil
}

// MarshalJSON writes a decimal id as a JSON number, anything else as a string.
func (f flexID) MarshalJSON() ([]byte, error) {
	if _, err := strconv.ParseInt(string(f), 10, 64); err == nil {
		return []byte(f), nil
	}
	return json.Marshal(string(f))
}
