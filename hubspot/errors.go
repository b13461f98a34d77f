package hubspot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind is the caller-facing class of a failed call: what the caller should do.
type Kind int

const (
	// KindNone is the Kind of a nil error and of errors that did not come from
	// HubSpot, notably the caller's own context cancellation or deadline.
	KindNone Kind = iota
	// KindRateLimited: HTTP 429. Wait RetryAfter (and slow down) before retrying.
	KindRateLimited
	// KindRetryable: 5xx, 423, 477, 408 or a transport failure. Retry after
	// RetryAfter (or a backoff). A write that failed this way may have been
	// applied: retry only idempotent writes (upsert, update) blindly.
	KindRetryable
	// KindConflict: HTTP 409, e.g. the object already exists (see ExistingID).
	KindConflict
	// KindValidation: HTTP 400 or 422; retrying the same request will not help.
	KindValidation
	// KindNotFound: HTTP 404.
	KindNotFound
	// KindAuth: HTTP 401 or 403; the token is wrong, expired or lacks a scope.
	KindAuth
	// KindPermanent: any other failure that retrying will not fix.
	KindPermanent
)

// String returns the Kind's name, e.g. "rate_limited".
func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindRateLimited:
		return "rate_limited"
	case KindRetryable:
		return "retryable"
	case KindConflict:
		return "conflict"
	case KindValidation:
		return "validation"
	case KindNotFound:
		return "not_found"
	case KindAuth:
		return "auth"
	case KindPermanent:
		return "permanent"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Sentinels matched by errors.Is against an *Error of the corresponding Kind.
// ErrRetryable also matches rate-limited errors, so "errors.Is(err,
// ErrRetryable)" answers "may I retry at all"; check ErrRateLimited first when
// rate limits need different treatment.
var (
	ErrRateLimited = errors.New("hubspot: rate limited")
	ErrRetryable   = errors.New("hubspot: retryable failure")
	ErrConflict    = errors.New("hubspot: conflict")
	ErrValidation  = errors.New("hubspot: validation failed")
	ErrNotFound    = errors.New("hubspot: not found")
	ErrAuth        = errors.New("hubspot: authentication or authorization failed")
	ErrPermanent   = errors.New("hubspot: permanent failure")
)

// ErrorDetail is one entry of the errors[] array of a HubSpot error body.
type ErrorDetail struct {
	Message     string
	Code        string
	In          string
	SubCategory string
	Context     map[string][]string
}

// Error is a failed HubSpot call: an HTTP error answer or a transport failure
// (then StatusCode is 0 and Err holds the cause). Every field parsed from the
// body is optional; a non-JSON body ends up, truncated, in Message.
type Error struct {
	// Method and Path identify the request, e.g. "POST", "/crm/v3/objects/contacts/batch/create".
	Method, Path string
	// StatusCode is the HTTP status; 0 for transport failures.
	StatusCode    int
	Category      string
	SubCategory   string
	Message       string
	CorrelationID string
	// PolicyName is the rate-limit policy of a 429: TEN_SECONDLY_ROLLING, SECONDLY or DAILY.
	PolicyName string
	ErrorType  string
	GroupName  string
	Errors     []ErrorDetail
	Context    map[string][]string
	// ExistingID is the id HubSpot names in a conflict ("Existing ID: 123").
	ExistingID string
	// RetryAfter is how long to wait before retrying; 0 when unknown.
	RetryAfter time.Duration
	// RetryAfterHeader is true when RetryAfter is HubSpot's own Retry-After
	// header, false when it was worked out from the policy (a DAILY 429
	// waits until the account's midnight in Config.TimeZone).
	RetryAfterHeader bool
	// RateLimit is what the error response's headers said about the budget.
	RateLimit RateLimit
	// Kind classifies the failure; see KindOf.
	Kind Kind
	// Err is the transport error, if any.
	Err error
}

// Error formats the failure with the fields useful in a log line.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("hubspot: ")
	if e.Method != "" {
		b.WriteString(e.Method + " " + e.Path + ": ")
	}
	if e.StatusCode != 0 {
		b.WriteString(strconv.Itoa(e.StatusCode))
		if e.Category != "" {
			b.WriteString(" " + e.Category)
		}
		if e.PolicyName != "" {
			b.WriteString(" " + e.PolicyName)
		}
		if e.Message != "" {
			b.WriteString(": " + e.Message)
		}
	} else if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString(e.Message)
	}
	if e.CorrelationID != "" {
		b.WriteString(" (correlationId " + e.CorrelationID + ")")
	}
	b.WriteString(" [" + e.Kind.String())
	if e.RetryAfter > 0 {
		b.WriteString(", retry after " + e.RetryAfter.String())
	}
	b.WriteString("]")
	return b.String()
}

// Unwrap returns the transport error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is the sentinel of e's Kind (see ErrRetryable).
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Kind == KindRateLimited
	case ErrRetryable:
		return e.Kind == KindRetryable || e.Kind == KindRateLimited
	case ErrConflict:
		return e.Kind == KindConflict
	case ErrValidation:
		return e.Kind == KindValidation
	case ErrNotFound:
		return e.Kind == KindNotFound
	case ErrAuth:
		return e.Kind == KindAuth
	case ErrPermanent:
		return e.Kind == KindPermanent
	}
	return false
}

// KindOf returns the Kind of err's *Error, KindNone for nil and for errors
// that did not come from HubSpot (such as the caller's context cancellation),
// and KindPermanent for client-side rejections such as ErrBatchTooLarge.
func KindOf(err error) Kind {
	if err == nil {
		return KindNone
	}
	var he *Error
	if errors.As(err, &he) {
		return he.Kind
	}
	if errors.Is(err, ErrBatchTooLarge) || errors.Is(err, ErrInvalidArgument) {
		return KindPermanent
	}
	return KindNone
}

// RetryAfterOf returns the RetryAfter of err's *Error, or 0.
func RetryAfterOf(err error) time.Duration {
	var he *Error
	if errors.As(err, &he) {
		return he.RetryAfter
	}
	return 0
}

// Retry-after defaults used when HubSpot does not say how long to wait.
const (
	// RetryAfterTenSecondlyDefault applies to a TEN_SECONDLY_ROLLING 429
	// without an interval header.
	RetryAfterTenSecondlyDefault = 10 * time.Second
	// RetryAfterLockedMin is the least wait after 423 Locked.
	RetryAfterLockedMin = 2 * time.Second
	// RetryAfterMigrationDefault applies to 477 without Retry-After.
	RetryAfterMigrationDefault = time.Minute
)

// errorBodyMax bounds how much of a non-JSON error body (or of an odd JSON
// value) is kept; messageMax bounds a JSON message, which can list many
// invalid properties.
const (
	errorBodyMax = 512
	messageMax   = 4096
)

var existingIDRe = regexp.MustCompile(`(?i)existing id:?\s*([0-9]+)`)

// wireError is the lenient JSON shape of HubSpot error bodies.
type wireError struct {
	Status        json.RawMessage              `json:"status"`
	Message       json.RawMessage              `json:"message"`
	CorrelationID json.RawMessage              `json:"correlationId"`
	Category      json.RawMessage              `json:"category"`
	SubCategory   json.RawMessage              `json:"subCategory"`
	PolicyName    json.RawMessage              `json:"policyName"`
	ErrorType     json.RawMessage              `json:"errorType"`
	GroupName     json.RawMessage              `json:"groupName"`
	Context       json.RawMessage              `json:"context"`
	Errors        []map[string]json.RawMessage `json:"errors"`
}

// parseError turns an HTTP error answer into an *Error, now being in the
// account's time zone (a DAILY 429 waits for its midnight). It never fails:
// whatever the body holds, the status code alone classifies the error.
func parseError(method, path string, status int, header http.Header, body []byte, now time.Time) *Error {
	e := &Error{Method: method, Path: path, StatusCode: status, RateLimit: ParseRateLimit(header)}
	var w wireError
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' && json.Unmarshal(trimmed, &w) == nil {
		e.Message = truncate(flexText(w.Message), messageMax)
		e.CorrelationID = flexText(w.CorrelationID)
		e.Category = flexText(w.Category)
		e.SubCategory = flexText(w.SubCategory)
		e.PolicyName = flexText(w.PolicyName)
		e.ErrorType = flexText(w.ErrorType)
		e.GroupName = flexText(w.GroupName)
		e.Context = flexContext(w.Context)
		for _, d := range w.Errors {
			e.Errors = append(e.Errors, ErrorDetail{
				Message:     flexText(d["message"]),
				Code:        flexText(d["code"]),
				In:          flexText(d["in"]),
				SubCategory: flexText(d["subCategory"]),
				Context:     flexContext(d["context"]),
			})
		}
	} else if len(trimmed) > 0 {
		e.Message = truncate(string(trimmed), errorBodyMax)
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	e.ExistingID = findExistingID(e.Message)
	for _, d := range e.Errors {
		if e.ExistingID != "" {
			break
		}
		e.ExistingID = findExistingID(d.Message)
	}
	classify(e, header, now)
	return e
}

func findExistingID(msg string) string {
	if m := existingIDRe.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// classify sets Kind and RetryAfter from the status code, the policy name and
// the headers. See the package doc for the table.
func classify(e *Error, header http.Header, now time.Time) {
	headerWait, hasHeaderWait := parseRetryAfter(header.Get("Retry-After"), now)
	switch s := e.StatusCode; {
	case s == http.StatusTooManyRequests:
		e.Kind = KindRateLimited
		switch {
		case hasHeaderWait:
			e.RetryAfter, e.RetryAfterHeader = headerWait, true
		case strings.EqualFold(e.PolicyName, "DAILY"):
			// Until midnight in now's location: the account's time zone.
			e.RetryAfter = NextMidnight(now, now.Location()).Sub(now)
		case strings.EqualFold(e.PolicyName, "SECONDLY"):
			e.RetryAfter = time.Second
		default: // TEN_SECONDLY_ROLLING or unknown policy
			e.RetryAfter = RetryAfterTenSecondlyDefault
			if ms := e.RateLimit.IntervalMillis; ms > 0 {
				e.RetryAfter = time.Duration(ms) * time.Millisecond
			}
		}
	case s == http.StatusLocked:
		e.Kind = KindRetryable
		e.RetryAfter = max(headerWait, RetryAfterLockedMin)
	case s == 477:
		e.Kind = KindRetryable
		e.RetryAfter = RetryAfterMigrationDefault
		if hasHeaderWait {
			e.RetryAfter = headerWait
		}
	case s == http.StatusRequestTimeout || s >= 500 && s <= 599:
		e.Kind = KindRetryable
		e.RetryAfter = headerWait
	case s == http.StatusConflict:
		e.Kind = KindConflict
	case s == http.StatusBadRequest || s == http.StatusUnprocessableEntity:
		e.Kind = KindValidation
	case s == http.StatusNotFound:
		e.Kind = KindNotFound
	case s == http.StatusUnauthorized || s == http.StatusForbidden:
		e.Kind = KindAuth
	default:
		e.Kind = KindPermanent
	}
}

// parseRetryAfter reads a Retry-After header in delay-seconds or HTTP-date form.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Cap absurd values rather than overflow Duration.
		return time.Duration(min(secs, int64(7*24*3600))) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// flexText renders a JSON value HubSpot documents as a string; other shapes
// (numbers, objects) are kept as their raw JSON text, null as "".
func flexText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return s
	}
	return truncate(string(raw), errorBodyMax)
}

// flexContext parses a context object whose values should be string arrays
// but may be single values.
func flexContext(raw json.RawMessage) map[string][]string {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || len(m) == 0 {
		return nil
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		var arr []json.RawMessage
		v = bytes.TrimSpace(v)
		if len(v) > 0 && v[0] == '[' && json.Unmarshal(v, &arr) == nil {
			vals := make([]string, 0, len(arr))
			for _, a := range arr {
				vals = append(vals, flexText(a))
			}
			out[k] = vals
			continue
		}
		out[k] = []string{flexText(v)}
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so the message stays valid UTF-8 where the body was.
	cut := n
	for cut > 0 && cut > n-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// transportError wraps a failure to get an HTTP answer.
func transportError(method, path string, err error, kind Kind) *Error {
	return &Error{Method: method, Path: path, Kind: kind, Err: fmt.Errorf("transport: %w", err)}
}
