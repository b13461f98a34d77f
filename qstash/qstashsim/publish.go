package qstashsim

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const publishPrefix = "/v2/publish/"

// destinationMax bounds a destination URL.
const destinationMax = 4096

// Headers of the publish request: the Upstash-Forward- prefix is stripped
// from forwarded headers on delivery, the others configure the message.
const (
	HeaderForwardPrefix     = "Upstash-Forward-"
	HeaderMethod            = "Upstash-Method"
	HeaderRetries           = "Upstash-Retries"
	HeaderRetryDelay        = "Upstash-Retry-Delay"
	HeaderDeduplicationID   = "Upstash-Deduplication-Id"
	HeaderContentBasedDedup = "Upstash-Content-Based-Deduplication"
	HeaderDelay             = "Upstash-Delay"
	HeaderNotBefore         = "Upstash-Not-Before"
	HeaderTimeout           = "Upstash-Timeout"
	HeaderFlowControlKey    = "Upstash-Flow-Control-Key"
	HeaderFlowControlValue  = "Upstash-Flow-Control-Value"
)

// Headers of a delivery, and the worker's answer.
const (
	HeaderSignature = "Upstash-Signature"
	HeaderMessageID = "Upstash-Message-Id"
	// HeaderRetried is 0 on the first attempt.
	HeaderRetried  = "Upstash-Retried"
	HeaderCallerIP = "Upstash-Caller-Ip"
	// HeaderNonRetryableError "true" on a StatusNonRetryable answer sends
	// the message to the DLQ at once.
	HeaderNonRetryableError = "Upstash-NonRetryable-Error"
	// UserAgent is the User-Agent of deliveries.
	UserAgent = "Upstash-QStash"
	// StatusNonRetryable is QStash's "do not retry" status.
	StatusNonRetryable = 489
)

// Bounds on publish input.
const (
	flowControlKeyMax   = 256
	deduplicationIDMax  = 256
	forwardedHeadersMax = 64
)

// publishOptions are the Upstash-* settings of a message.
type publishOptions struct {
	method       string
	retries      int
	retryDelay   *RetryDelay
	delay        time.Duration
	notBefore    time.Time // zero: none
	timeout      time.Duration
	dedupID      string
	contentDedup bool
	flowKey      string
	flow         FlowControl
	header       http.Header // delivered as is: forwarded headers and Content-Type
}

var methods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// parsePublishHeaders reads the Upstash-* headers of a publish request. With
// base non-nil (a DLQ retry), headers present override base's settings and
// the delivered headers stay base's.
func (s *Server) parsePublishHeaders(h http.Header, base *publishOptions) (publishOptions, error) {
	var o publishOptions
	if base != nil {
		o = *base
		o.delay, o.notBefore, o.dedupID, o.contentDedup = 0, time.Time{}, "", false
	} else {
		o = publishOptions{method: http.MethodPost, retries: s.cfg.DefaultRetries, timeout: s.cfg.DeliveryTimeout, header: http.Header{}}
		n := 0
		for k, vs := range h {
			name, ok := strings.CutPrefix(k, HeaderForwardPrefix)
			if !ok {
				continue
			}
			if name == "" {
				return o, fmt.Errorf("%s needs a header name after the prefix", HeaderForwardPrefix)
			}
			if n++; n > forwardedHeadersMax {
				return o, fmt.Errorf("more than %d %s* headers", forwardedHeadersMax, HeaderForwardPrefix)
			}
			o.header[http.CanonicalHeaderKey(name)] = slices.Clone(vs)
		}
		if ct := h.Get("Content-Type"); ct != "" {
			o.header.Set("Content-Type", ct)
		}
	}
	var errs []error
	bad := func(name, v string, err error) {
		errs = append(errs, fmt.Errorf("%s %q: %w", name, v, err))
	}
	if v := h.Get(HeaderMethod); v != "" {
		m := strings.ToUpper(strings.TrimSpace(v))
		if !slices.Contains(methods, m) {
			bad(HeaderMethod, v, errors.New("must be GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS"))
		}
		o.method = m
	}
	if v := h.Get(HeaderRetries); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > s.cfg.MaxRetries {
			bad(HeaderRetries, v, fmt.Errorf("must be a whole number from 0 to %d", s.cfg.MaxRetries))
		}
		o.retries = n
	}
	if v := h.Get(HeaderRetryDelay); v != "" {
		rd, err := ParseRetryDelay(v)
		if err != nil {
			bad(HeaderRetryDelay, v, fmt.Errorf("%w; write e.g. \"pow(2, retried) * 1000\" (milliseconds)", err))
		}
		o.retryDelay = rd
	}
	if v := h.Get(HeaderDelay); v != "" {
		d, err := ParseDelay(v)
		if err != nil {
			bad(HeaderDelay, v, err)
		}
		o.delay = d
	}
	if v := h.Get(HeaderNotBefore); v != "" {
		n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || n < 0 || n > 1<<40 {
			bad(HeaderNotBefore, v, errors.New("must be a Unix time in seconds"))
		} else {
			o.notBefore = time.Unix(n, 0)
		}
	}
	if v := h.Get(HeaderTimeout); v != "" {
		d, err := ParseDelay(v)
		if err == nil && d == 0 {
			err = errors.New("must be positive")
		}
		if err != nil {
			bad(HeaderTimeout, v, err)
		}
		o.timeout = d
	}
	if v := h.Get(HeaderDeduplicationID); v != "" {
		if len(v) > deduplicationIDMax {
			bad(HeaderDeduplicationID, v[:32]+"…", fmt.Errorf("longer than %d bytes", deduplicationIDMax))
		}
		o.dedupID = v
	}
	if v := h.Get(HeaderContentBasedDedup); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			bad(HeaderContentBasedDedup, v, errors.New("must be true or false"))
		}
		o.contentDedup = b
	}
	key, value := h.Get(HeaderFlowControlKey), h.Get(HeaderFlowControlValue)
	switch {
	case key != "":
		if len(key) > flowControlKeyMax {
			bad(HeaderFlowControlKey, key[:32]+"…", fmt.Errorf("longer than %d bytes", flowControlKeyMax))
		}
		fc, err := ParseFlowControlValue(value)
		if err != nil {
			bad(HeaderFlowControlValue, value, err)
		}
		o.flowKey, o.flow = key, fc
	case value != "":
		bad(HeaderFlowControlValue, value, fmt.Errorf("needs %s", HeaderFlowControlKey))
	}
	return o, errors.Join(errs...)
}

// parseDestination reads the destination appended raw to /v2/publish/ (or
// percent-encoded whole, as some clients send it) plus the request's query.
func parseDestination(rawPath, rawQuery string) (string, error) {
	dest := rawPath
	if lower := strings.ToLower(dest); strings.HasPrefix(lower, "http%3a") || strings.HasPrefix(lower, "https%3a") {
		d, err := url.PathUnescape(dest)
		if err != nil {
			return "", fmt.Errorf("destination %q: %w", rawPath, err)
		}
		dest = d
	}
	if rawQuery != "" {
		dest += "?" + rawQuery
	}
	if dest == "" {
		return "", errors.New("no destination; append it to the path: /v2/publish/https://example.com/api")
	}
	if len(dest) > destinationMax {
		return "", fmt.Errorf("destination longer than %d bytes", destinationMax)
	}
	u, err := url.Parse(dest)
	if err != nil {
		return "", fmt.Errorf("destination %q: %w", dest, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("destination %q must be an absolute http(s) URL, e.g. /v2/publish/https://example.com/api", dest)
	}
	return dest, nil
}

func (s *Server) authorized(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(s.cfg.Token)) == 1
}

// PublishResponse is the answer of a publish and of a DLQ retry.
type PublishResponse struct {
	MessageID    string `json:"messageId"`
	Deduplicated bool   `json:"deduplicated"`
}

func (s *Server) handlePublish(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeError(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer $QSTASH_TOKEN")
		return
	}
	dest, err := parseDestination(strings.TrimPrefix(r.URL.EscapedPath(), publishPrefix), r.URL.RawQuery)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid destination: "+err.Error())
		return
	}
	opts, err := s.parsePublishHeaders(r.Header, nil)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.BodyMax+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	if int64(len(body)) > s.cfg.BodyMax {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("body larger than %d bytes", s.cfg.BodyMax))
		return
	}
	host, _, _ := net.SplitHostPort(r.RemoteAddr)
	id, dup, err := s.publish(dest, opts, body, host)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	status := http.StatusCreated
	if dup {
		status = http.StatusAccepted // QStash's answer to a duplicate
	}
	writeJSON(w, status, PublishResponse{MessageID: id, Deduplicated: dup})
}

type dedupEntry struct {
	msgID string
	at    time.Time
}

type dedupRef struct {
	key string
	at  time.Time
}

// dedupKey is the message's deduplication key, "" for none. Content-based
// deduplication hashes the destination, the delivered headers and the body,
// as QStash documents.
func dedupKey(dest string, o publishOptions, body []byte) string {
	if o.dedupID != "" {
		return "id:" + o.dedupID
	}
	if !o.contentDedup {
		return ""
	}
	h := sha256.New()
	h.Write([]byte(dest))
	h.Write([]byte{0})
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range o.header {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		for _, v := range o.header[k] {
			fmt.Fprintf(h, "%s:%s\n", k, v)
		}
	}
	h.Write([]byte{0})
	h.Write(body)
	return "content:" + hex.EncodeToString(h.Sum(nil))
}

// publish stores a message and schedules its first attempt, or answers the
// existing message of a deduplication key seen within the window.
func (s *Server) publish(dest string, o publishOptions, body []byte, callerIP string) (id string, duplicate bool, err error) {
	key := dedupKey(dest, o, body)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return "", false, ErrClosed
	}
	now := s.cfg.Now()
	for len(s.dedupOrder) > 0 && !now.Before(s.dedupOrder[0].at.Add(s.cfg.DedupWindow)) {
		ref := s.dedupOrder[0]
		if e, ok := s.dedup[ref.key]; ok && e.at.Equal(ref.at) {
			delete(s.dedup, ref.key)
		}
		s.dedupOrder = s.dedupOrder[1:]
	}
	if key != "" {
		if e, ok := s.dedup[key]; ok && now.Sub(e.at) < s.cfg.DedupWindow {
			s.stats.Deduplicated++
			return e.msgID, true, nil
		}
	}
	m := &message{
		id: s.newIDLocked("msg_"), url: dest, opts: o, body: body,
		callerIP: callerIP, createdAt: now, state: stateCreated,
	}
	s.msgs[m.id] = m
	if key != "" {
		s.dedup[key] = dedupEntry{msgID: m.id, at: now}
		s.dedupOrder = append(s.dedupOrder, dedupRef{key: key, at: now})
	}
	if o.flowKey != "" {
		if f, ok := s.flows[o.flowKey]; ok {
			f.fc = o.flow
		} else {
			s.flows[o.flowKey] = &flowState{fc: o.flow}
		}
	}
	s.stats.Published++
	wait := o.delay
	if !o.notBefore.IsZero() {
		wait = max(wait, o.notBefore.Sub(now))
	}
	s.enqueueLocked(&attempt{msg: m, due: time.Now().Add(s.scale(wait))})
	return m.id, false, nil
}

// scale shrinks (or stretches) a wait by Config.DelayScale, saturating
// instead of overflowing for a Not-Before far in the future.
func (s *Server) scale(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	f := float64(d) * s.cfg.DelayScale
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(f)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, `{"error":"encode answer"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers QStash's error shape {"error": "…"}.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
