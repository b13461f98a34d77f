package qstash

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of Config and Message.
const (
	// TimeoutDefault bounds one publish request.
	TimeoutDefault = 10 * time.Second
	// RetriesDefault is Upstash-Retries: QStash delivers at most 1 + retries times.
	RetriesDefault = 5
	// FlowRateDefault, FlowPeriodDefault and FlowParallelismDefault are seed
	// 002's flow control: 150 deliveries per 10 s, 12 at once.
	FlowRateDefault        = 150
	FlowPeriodDefault      = 10 * time.Second
	FlowParallelismDefault = 12
	// maxAnswerBytes bounds the publish answer read.
	maxAnswerBytes = 64 << 10
)

// Config configures a Client.
type Config struct {
	// URL is QStash's base URL, e.g. the emulator's address.
	URL string
	// Token is the bearer token of the publish API.
	Token string
	// HTTPClient makes the requests; default a client with Timeout.
	HTTPClient *http.Client
	// Timeout bounds one publish; default TimeoutDefault.
	Timeout time.Duration
}

// Client publishes messages to QStash.
type Client struct {
	base  string
	token string
	http  *http.Client
}

// NewClient validates cfg and returns a Client.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("qstash: Config.URL %q is not an absolute http(s) URL; set it to QStash's base URL", cfg.URL)
	}
	if cfg.Token == "" {
		return nil, errors.New("qstash: Config.Token is empty; set it to the QStash token")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: cmp.Or(cfg.Timeout, TimeoutDefault)}
	}
	return &Client{base: strings.TrimRight(cfg.URL, "/"), token: cfg.Token, http: hc}, nil
}

// FlowControl limits QStash's deliveries of every message that carries the
// same Key: at most Rate per Period, and Parallelism at once.
type FlowControl struct {
	Key         string
	Rate        int
	Period      time.Duration
	Parallelism int
}

// Value is the Upstash-Flow-Control-Value header, e.g.
// "parallelism=12, rate=150, period=10s".
func (f FlowControl) Value() string {
	var parts []string
	if f.Parallelism > 0 {
		parts = append(parts, "parallelism="+strconv.Itoa(f.Parallelism))
	}
	if f.Rate > 0 {
		parts = append(parts, "rate="+strconv.Itoa(f.Rate))
	}
	if f.Period > 0 {
		parts = append(parts, "period="+strconv.Itoa(int(f.Period.Round(time.Second)/time.Second))+"s")
	}
	return strings.Join(parts, ", ")
}

// Message is one publish.
type Message struct {
	// Destination is the worker URL QStash delivers to, exactly as the worker
	// verifies it (the signature's sub claim).
	Destination string
	// Body is sent as application/json.
	Body []byte
	// DeduplicationID makes QStash drop a second publish with the same id
	// within its deduplication window (answered deduplicated:true).
	DeduplicationID string
	// Retries is Upstash-Retries; 0 means RetriesDefault, negative 0 retries.
	Retries int
	// RetryDelay is Upstash-Retry-Delay, QStash's expression of the wait
	// before a retry in milliseconds, e.g. "pow(2, retried) * 1000"; empty
	// leaves QStash's default backoff.
	RetryDelay string
	// FlowControl is sent when its Key is set.
	FlowControl FlowControl
}

// PublishResult is QStash's answer.
type PublishResult struct {
	MessageID    string `json:"messageId"`
	Deduplicated bool   `json:"deduplicated"`
}

// Error is a publish QStash refused or could not be reached for.
type Error struct {
	// StatusCode is the HTTP status, 0 when no answer came.
	StatusCode int
	// Message is QStash's {"error":…} text, or the transport error.
	Message string
	// RetryAfter is the wait QStash asked for (429), if any.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.StatusCode == 0 {
		return "qstash: publish: " + e.Message
	}
	return fmt.Sprintf("qstash: publish: %d %s", e.StatusCode, e.Message)
}

// Permanent reports whether retrying the same publish cannot help (a 4xx
// other than 408 and 429: a bad token or a refused destination).
func (e *Error) Permanent() bool {
	return e.StatusCode >= 400 && e.StatusCode < 500 && e.StatusCode != http.StatusTooManyRequests && e.StatusCode != http.StatusRequestTimeout
}

// Publish sends m: POST {URL}/v2/publish/{Destination}. A transport failure
// or a non-2xx answer is an *Error.
func (c *Client) Publish(ctx context.Context, m Message) (PublishResult, error) {
	if m.Destination == "" {
		return PublishResult{}, errors.New("qstash: publish: empty destination")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/v2/publish/"+m.Destination, bytes.NewReader(m.Body))
	if err != nil {
		return PublishResult{}, fmt.Errorf("qstash: publish: %w", err)
	}
	h := req.Header
	h.Set("Authorization", "Bearer "+c.token)
	h.Set("Content-Type", "application/json")
	h.Set("Upstash-Method", http.MethodPost)
	retries := m.Retries
	if retries == 0 {
		retries = RetriesDefault
	}
	h.Set("Upstash-Retries", strconv.Itoa(max(retries, 0)))
	if m.RetryDelay != "" {
		h.Set("Upstash-Retry-Delay", m.RetryDelay)
	}
	if m.DeduplicationID != "" {
		h.Set("Upstash-Deduplication-Id", m.DeduplicationID)
	}
	if m.FlowControl.Key != "" {
		h.Set("Upstash-Flow-Control-Key", m.FlowControl.Key)
		if v := m.FlowControl.Value(); v != "" {
			h.Set("Upstash-Flow-Control-Value", v)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return PublishResult{}, &Error{Message: err.Error()}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if err != nil {
		return PublishResult{}, &Error{StatusCode: resp.StatusCode, Message: "read answer: " + err.Error()}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var e struct {
			Error string `json:"error"`
		}
		msg := strings.TrimSpace(string(body))
		if json.Unmarshal(body, &e) == nil && e.Error != "" {
			msg = e.Error
		}
		if len(msg) > 200 {
			msg = msg[:200]
		}
		qe := &Error{StatusCode: resp.StatusCode, Message: msg}
		qe.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return PublishResult{}, qe
	}
	var res PublishResult
	if err := json.Unmarshal(body, &res); err != nil || res.MessageID == "" {
		return PublishResult{}, &Error{StatusCode: resp.StatusCode, Message: "answer has no messageId"}
	}
	return res, nil
}

// RetryAfterMax bounds the wait a publish answer's Retry-After may ask for,
// so that a wrong or hostile header (a century, a number past what a
// time.Duration holds) cannot park an event, and every later event of its
// record, far beyond any rate window.
const RetryAfterMax = time.Hour

// parseRetryAfter reads a Retry-After header in delay-seconds or HTTP-date
// form, capped at RetryAfterMax; absent, malformed, negative or past values
// ask for no wait.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	secs, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err == nil:
		return time.Duration(min(max(secs, 0), int64(RetryAfterMax/time.Second))) * time.Second
	case errors.Is(err, strconv.ErrRange):
		if secs > 0 {
			return RetryAfterMax // more seconds than an int64 holds
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), RetryAfterMax)
	}
	return 0
}
