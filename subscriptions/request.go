package subscriptions

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hubsync/hubsync/internal/textcheck"
)

// The desired states of a request.
const (
	StateSubscribed   = "subscribed"
	StateUnsubscribed = "unsubscribed"
)

// The sync statuses of a request: pending until the worker settles it.
const (
	// StatusPending: not yet settled by the outbound worker.
	StatusPending = "pending"
	// StatusSynced: HubSpot holds the request's state.
	StatusSynced = "synced"
	// StatusFailed: HubSpot refused the state for good; SyncDetail says why.
	StatusFailed = "failed"
	// StatusSuperseded: a newer request of the same contact was settled first;
	// its state, not this one's, is what HubSpot was sent.
	StatusSuperseded = "superseded"
)

// Limits of a request's fields. RecordID (brand/product/contact) must fit the
// outbound queue's 255-character RecordID.
const (
	MaxIDLength         = 50
	MaxContactKeyLength = 150
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes = 4 << 10
	// MaxIdempotencyKeyLength bounds the Idempotency-Key header.
	MaxIdempotencyKeyLength = 255
)

// ErrInvalidRequest is wrapped by every error of ParseRequest.
var ErrInvalidRequest = errors.New("invalid subscription request")

// Request is one subscription request: contact ContactKey of brand BrandID
// wants DesiredState for product ProductID's communications.
type Request struct {
	BrandID   string `json:"brand_id"`
	ProductID string `json:"product_id"`
	// ContactKey is the contact's email address (HubSpot's communication
	// preferences are per email), lower-cased.
	ContactKey string `json:"contact_key"`
	// DesiredState is StateSubscribed or StateUnsubscribed.
	DesiredState string `json:"desired_state"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9_.:-]+$`)

// ParseRequest decodes and validates a request body: a JSON object with
// exactly brand_id, product_id, contact_key and desired_state. The result is
// canonical (trimmed, contact_key lower-cased), so equal requests hash alike.
func ParseRequest(body []byte) (Request, error) {
	if len(body) > MaxBodyBytes {
		return Request{}, fmt.Errorf("%w: body larger than %d bytes", ErrInvalidRequest, MaxBodyBytes)
	}
	// encoding/json decodes invalid UTF-8 and a lone surrogate escape to
	// U+FFFD without a word: refuse them, so a contact key is what was sent.
	if !utf8.Valid(body) {
		return Request{}, fmt.Errorf("%w: the body is not valid UTF-8", ErrInvalidRequest)
	}
	if p := textcheck.JSONProblem(body); p != "" {
		return Request{}, fmt.Errorf("%w: the body %s", ErrInvalidRequest, p)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var r Request
	if err := dec.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("%w: %v", ErrInvalidRequest, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Request{}, fmt.Errorf("%w: trailing data after the JSON object", ErrInvalidRequest)
	}
	r.BrandID = strings.TrimSpace(r.BrandID)
	r.ProductID = strings.TrimSpace(r.ProductID)
	r.ContactKey = strings.ToLower(strings.TrimSpace(r.ContactKey))
	r.DesiredState = strings.TrimSpace(r.DesiredState)
	var errs []error
	for _, f := range []struct{ name, v string }{{"brand_id", r.BrandID}, {"product_id", r.ProductID}} {
		switch {
		case f.v == "":
			errs = append(errs, fmt.Errorf("%s is required", f.name))
		case len(f.v) > MaxIDLength || !idPattern.MatchString(f.v):
			errs = append(errs, fmt.Errorf("%s %q must be 1-%d letters, digits, _ . : or -", f.name, f.v, MaxIDLength))
		}
	}
	switch {
	case r.ContactKey == "":
		errs = append(errs, errors.New("contact_key is required (the contact's email address)"))
	case len(r.ContactKey) > MaxContactKeyLength || !looksLikeEmail(r.ContactKey):
		errs = append(errs, fmt.Errorf("contact_key must be the contact's email address (at most %d characters)", MaxContactKeyLength))
	}
	switch r.DesiredState {
	case StateSubscribed, StateUnsubscribed:
	case "":
		errs = append(errs, errors.New(`desired_state is required: "subscribed" or "unsubscribed"`))
	default:
		errs = append(errs, fmt.Errorf(`desired_state %q must be "subscribed" or "unsubscribed"`, r.DesiredState))
	}
	if err := errors.Join(errs...); err != nil {
		return Request{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	return r, nil
}

func looksLikeEmail(s string) bool {
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") {
		return false
	}
	for _, c := range s {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == '/' {
			return false
		}
	}
	return true
}

// Hash is the hash of the canonical request: what a retry under the same
// Idempotency-Key must match.
func (r Request) Hash() string {
	b, _ := json.Marshal(r) // fixed field order: canonical
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// RecordID is the outbound queue's record id of the request's contact,
// brand/product/contact: the queue orders a record's events and never hands
// one record to two workers at once.
func (r Request) RecordID() string { return r.BrandID + "/" + r.ProductID + "/" + r.ContactKey }

// Stored is a stored request.
type Stored struct {
	ID string `json:"id"`
	Request
	MappingVersion int    `json:"mapping_version"`
	IdempotencyKey string `json:"-"`
	RequestHash    string `json:"-"`
	// SyncStatus is StatusPending, StatusSynced, StatusFailed or StatusSuperseded.
	SyncStatus string `json:"sync_status"`
	// SyncDetail says why a request failed.
	SyncDetail string `json:"sync_detail,omitempty"`
	// AppliedSequence is the request's place in its contact's order.
	AppliedSequence int64     `json:"applied_sequence"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// eventPayload is the outbound event of a request.
type eventPayload struct {
	RequestID      string `json:"request_id"`
	Sequence       int64  `json:"sequence"`
	BrandID        string `json:"brand_id"`
	ProductID      string `json:"product_id"`
	ContactKey     string `json:"contact_key"`
	DesiredState   string `json:"desired_state"`
	MappingVersion int    `json:"mapping_version"`
}
