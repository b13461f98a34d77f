package hubspot

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults for Config.
const (
	// BaseURLDefault is HubSpot's API host.
	BaseURLDefault = "https://api.hubapi.com"
	// TimeoutDefault bounds one HTTP request (HubSpot itself gives up after 100 s).
	TimeoutDefault = 30 * time.Second
	// UserAgentDefault identifies this client to HubSpot.
	UserAgentDefault = "hubsync-hubspot/1"
)

// responseBodyMax bounds how much of a success body the client reads.
const responseBodyMax = 64 << 20

// Config configures a Client. The zero value of every field but AccessToken
// means its default.
type Config struct {
	// BaseURL is the API root; BaseURLDefault when empty. Tests point it at a
	// simulator or an httptest server.
	BaseURL string
	// AccessToken is the private app's access token, sent as a Bearer token.
	AccessToken string
	// HTTPClient sends the requests; when nil, a client with its own pooled
	// transport and Timeout is used.
	HTTPClient *http.Client
	// Timeout bounds each request (TimeoutDefault when 0). A request that
	// runs out of it fails with KindRetryable, unlike the caller's own
	// context, whose cancellation or deadline is returned as is.
	Timeout time.Duration
	// UserAgent is sent as User-Agent; UserAgentDefault when empty.
	UserAgent string
	// TimeZone is the account's time zone (Client.AccountLocation): a DAILY
	// 429 without Retry-After waits until its midnight, when HubSpot resets
	// the daily limit. Default UTC.
	TimeZone *time.Location
	// OnResponse, when set, is called after every HTTP response (success or
	// error, reads and writes alike) with the request's context and what the
	// response said about the rate limits, so that one hook calibrates a
	// shared budget for every call (see budget.ObserveHubSpot) and feeds
	// metrics. It runs on the calling goroutine and must be quick and
	// concurrency-safe.
	OnResponse func(ctx context.Context, r Response)
}

// Response is what Config.OnResponse learns of one HTTP response.
type Response struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// RateLimit holds the response's X-HubSpot-RateLimit-* headers.
	RateLimit RateLimit
	// Err is the classified error of a non-2xx answer (for a 429 its
	// PolicyName and RetryAfter); nil for a 2xx answer.
	Err *Error
}

func (c *Config) validate() error {
	if c.AccessToken == "" {
		return errors.New("hubspot: Config.AccessToken is empty; set it to the private app's access token")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("hubspot: Config.Timeout is %s; set a positive duration or 0 for %s", c.Timeout, TimeoutDefault)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("hubspot: Config.BaseURL %q is not an absolute http(s) URL; leave it empty for %s", c.BaseURL, BaseURLDefault)
	}
	return nil
}

// Client calls the HubSpot API. It is safe for concurrent use. It never
// retries: every failure is returned, classified (see Kind), so that the
// caller's scheduler owns backoff and rate budgeting.
type Client struct {
	baseURL    string
	token      string
	httpClient *http.Client
	timeout    time.Duration
	userAgent  string
	onResponse func(context.Context, Response)
	now        func() time.Time
	zone       *time.Location
	bodyMax    int64 // responseBodyMax; tests lower it
}

// NewClient returns a Client for cfg.
func NewClient(cfg Config) (*Client, error) {
	cfg.BaseURL = strings.TrimRight(cmp.Or(cfg.BaseURL, BaseURLDefault), "/")
	cfg.Timeout = cmp.Or(cfg.Timeout, TimeoutDefault)
	cfg.UserAgent = cmp.Or(cfg.UserAgent, UserAgentDefault)
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 16
		hc = &http.Client{Transport: tr, Timeout: cfg.Timeout}
	}
	return &Client{
		baseURL:    cfg.BaseURL,
		token:      cfg.AccessToken,
		httpClient: hc,
		timeout:    cfg.Timeout,
		userAgent:  cfg.UserAgent,
		onResponse: cfg.OnResponse,
		now:        time.Now,
		zone:       cmp.Or(cfg.TimeZone, time.UTC),
		bodyMax:    responseBodyMax,
	}, nil
}

// response is what do hands back on success.
type response struct {
	status    int
	rateLimit RateLimit
}

// do sends one request. in, when non-nil, is sent as JSON; out, when
// non-nil, receives the JSON body of a 2xx answer. Non-2xx answers and
// transport failures come back as *Error; the caller's own context ending
// comes back as its ctx.Err(), wrapped.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any) (response, error) {
	var body io.Reader
	if in != nil {
		buf, err := json.Marshal(in)
		if err != nil {
			return response{}, fmt.Errorf("hubspot: %s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(buf)
	}
	target := c.baseURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}

	reqCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, method, target, body)
	if err != nil {
		return response{}, transportError(method, path, err, KindPermanent)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := c.httpClient.Do(req)
	if err != nil {
		return response{}, c.failure(ctx, method, path, err)
	}
	defer resp.Body.Close()

	rl := ParseRateLimit(resp.Header)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		// A partial error body is still worth classifying by status.
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := parseError(method, path, resp.StatusCode, resp.Header, data, c.now().In(c.zone))
		if c.onResponse != nil {
			c.onResponse(ctx, Response{StatusCode: resp.StatusCode, RateLimit: rl, Err: e})
		}
		return response{}, e
	}
	if c.onResponse != nil {
		c.onResponse(ctx, Response{StatusCode: resp.StatusCode, RateLimit: rl})
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, c.bodyMax+1))
	if err == nil && int64(len(data)) > c.bodyMax {
		// Not cut short and decoded as malformed: an answer this large is
		// not one HubSpot gives, and the write (if any) may have been
		// applied, so it counts as lost, as a broken connection does.
		err = fmt.Errorf("the body is larger than %d bytes", c.bodyMax)
	}
	if err != nil {
		// The write (if any) was probably applied; the answer was lost.
		return response{}, c.failure(ctx, method, path, fmt.Errorf("read %d response: %w", resp.StatusCode, err))
	}
	if out != nil && len(bytes.TrimSpace(data)) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			return response{}, &Error{
				Method: method, Path: path, StatusCode: resp.StatusCode, Kind: KindPermanent,
				Message: "decode response: " + truncate(string(data), errorBodyMax), RateLimit: rl,
				Err: fmt.Errorf("decode %d response: %w", resp.StatusCode, err),
			}
		}
	}
	return response{status: resp.StatusCode, rateLimit: rl}, nil
}

// failure classifies an error from sending a request or reading its answer.
// The caller's own context ending is not HubSpot's fault and not retryable
// by this layer, so it is returned unclassified; everything else a transport
// can say (timeouts incl. our per-request one, resets, refusals, EOF, DNS)
// is retryable, except certificate errors, which no retry will fix.
func (c *Client) failure(ctx context.Context, method, path string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("hubspot: %s %s: %w", method, path, ctxErr)
	}
	var (
		unknownAuth x509.UnknownAuthorityError
		hostname    x509.HostnameError
		invalid     x509.CertificateInvalidError
	)
	if errors.As(err, &unknownAuth) || errors.As(err, &hostname) || errors.As(err, &invalid) {
		return transportError(method, path, err, KindPermanent)
	}
	return transportError(method, path, err, KindRetryable)
}

// escapePath escapes one path segment (object type, id, email).
func escapePath(s string) string { return url.PathEscape(s) }
