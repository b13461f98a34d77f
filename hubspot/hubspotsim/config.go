package hubspotsim

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"
)

// Defaults applied to zero-valued Config fields.
const (
	// AppIDDefault is the app id used when Config.AppID is zero.
	AppIDDefault int64 = 1000
	// PortalIDDefault is the portal (account) id used when Config.PortalID is zero.
	PortalIDDefault int64 = 12345
	// AccessTokenDefault is the private-app token accepted when Config.AccessToken is empty.
	AccessTokenDefault = "pat-sim-00000000-0000-0000-0000-000000000000"
	// ClientSecretDefault signs webhooks when Config.ClientSecret is empty.
	ClientSecretDefault = "sim-client-secret"
	// TenSecondLimitDefault is the Free/Starter private-app burst limit.
	TenSecondLimitDefault = 100
	// DailyLimitDefault is the Free/Starter private-app daily limit.
	DailyLimitDefault = 250000
	// SearchPerSecondDefault is HubSpot's search API limit.
	SearchPerSecondDefault = 5
	// WebhookBatchSizeDefault is the most events per webhook request (HubSpot's maximum).
	WebhookBatchSizeDefault = 100
	// WebhookMaxAttemptsDefault is how many times a webhook batch is tried before it is dropped.
	WebhookMaxAttemptsDefault = 10
	// WebhookRetryBaseDefault scales the random, growing delay between webhook attempts.
	WebhookRetryBaseDefault = time.Second
	// WebhookTimeoutDefault is how long HubSpot waits for a webhook answer.
	WebhookTimeoutDefault = 5 * time.Second
	// WebhookConcurrencyDefault is HubSpot's default limit of concurrent webhook requests.
	WebhookConcurrencyDefault = 10

	// BatchInputsMax is the most inputs a batch endpoint accepts.
	BatchInputsMax = 100
	// SearchLimitMax is the largest search page.
	SearchLimitMax = 200
	// SearchResultsMax is how deep search paging can go.
	SearchResultsMax = 10000
	// SearchBodyMax is the largest search request body, in bytes.
	SearchBodyMax = 3000
)

// Config configures a Server. The zero value is usable: every zero field takes
// the default named after it.
type Config struct {
	// CommPrefsRequireContact makes v3 subscribe/unsubscribe answer 404 for
	// an address no contact has (hubsync's "contact unknown" case); by
	// default any address is accepted.
	CommPrefsRequireContact bool
	// AppID is the id of the private app using the API; API writes made with
	// AccessToken produce webhook events with sourceId = AppID.
	AppID int64
	// PortalID is the HubSpot account id put in webhook events.
	PortalID int64
	// AccessToken is the only bearer token accepted (default AccessTokenDefault).
	AccessToken string
	// ClientSecret signs webhook requests (default ClientSecretDefault).
	ClientSecret string
	// WebhookURL receives webhook batches; empty means no webhooks are produced.
	// It can be changed later with SetWebhookURL.
	WebhookURL string
	// TenSecondLimit is the rolling ten-second request limit (typical 100/110/190/250).
	TenSecondLimit int
	// DailyLimit is the per-day request limit.
	DailyLimit int
	// TimeZone is the account's time zone, an IANA name: the daily limit
	// resets at its midnight, as HubSpot's does, and GET
	// /account-info/v3/details reports it. Default "UTC".
	TimeZone string
	// SearchPerSecond is the search API's own per-second limit.
	SearchPerSecond int
	// WebhookBatchSize is the most events per webhook request (at most 100).
	WebhookBatchSize int
	// WebhookMaxAttempts is how many delivery attempts a batch gets before it is dropped.
	WebhookMaxAttempts int
	// WebhookRetryBase scales retry delays: attempt n waits about
	// WebhookRetryBase × 2^n, randomised between half and one and a half times that.
	WebhookRetryBase time.Duration
	// WebhookTimeout is how long a webhook receiver may take to answer.
	WebhookTimeout time.Duration
	// WebhookConcurrency is the most webhook requests in flight at once.
	WebhookConcurrency int
	// Now is the clock for rate limits, timestamps and webhook occurredAt;
	// tests inject one to roll rate-limit windows without sleeping.
	Now func() time.Time
	// Seed seeds the randomness of faults and retry jitter.
	Seed int64
	// Faults are the initial injected faults; see SetFaults.
	Faults Faults
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.AppID = cmp.Or(c.AppID, AppIDDefault)
	c.PortalID = cmp.Or(c.PortalID, PortalIDDefault)
	c.AccessToken = cmp.Or(c.AccessToken, AccessTokenDefault)
	c.ClientSecret = cmp.Or(c.ClientSecret, ClientSecretDefault)
	c.TenSecondLimit = cmp.Or(c.TenSecondLimit, TenSecondLimitDefault)
	c.DailyLimit = cmp.Or(c.DailyLimit, DailyLimitDefault)
	c.TimeZone = cmp.Or(c.TimeZone, "UTC")
	c.SearchPerSecond = cmp.Or(c.SearchPerSecond, SearchPerSecondDefault)
	c.WebhookBatchSize = cmp.Or(c.WebhookBatchSize, WebhookBatchSizeDefault)
	c.WebhookMaxAttempts = cmp.Or(c.WebhookMaxAttempts, WebhookMaxAttemptsDefault)
	c.WebhookRetryBase = cmp.Or(c.WebhookRetryBase, WebhookRetryBaseDefault)
	c.WebhookTimeout = cmp.Or(c.WebhookTimeout, WebhookTimeoutDefault)
	c.WebhookConcurrency = cmp.Or(c.WebhookConcurrency, WebhookConcurrencyDefault)
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	var errs []error
	positive := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%s must not be negative (got %d); use 0 for the default", name, v))
		}
	}
	positive("AppID", c.AppID)
	positive("PortalID", c.PortalID)
	positive("TenSecondLimit", int64(c.TenSecondLimit))
	positive("DailyLimit", int64(c.DailyLimit))
	positive("SearchPerSecond", int64(c.SearchPerSecond))
	positive("WebhookBatchSize", int64(c.WebhookBatchSize))
	positive("WebhookMaxAttempts", int64(c.WebhookMaxAttempts))
	positive("WebhookRetryBase", int64(c.WebhookRetryBase))
	positive("WebhookTimeout", int64(c.WebhookTimeout))
	positive("WebhookConcurrency", int64(c.WebhookConcurrency))
	if c.WebhookBatchSize > WebhookBatchSizeDefault {
		errs = append(errs, fmt.Errorf("WebhookBatchSize must be at most %d, HubSpot's maximum (got %d); lower it", WebhookBatchSizeDefault, c.WebhookBatchSize))
	}
	if c.TimeZone != "" {
		if _, err := time.LoadLocation(c.TimeZone); err != nil {
			errs = append(errs, fmt.Errorf("TimeZone %q: %w; use an IANA name such as America/New_York", c.TimeZone, err))
		}
	}
	if err := validateWebhookURL(c.WebhookURL); err != nil {
		errs = append(errs, fmt.Errorf("WebhookURL: %w", err))
	}
	if err := c.Faults.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Faults: %w", err))
	}
	return errors.Join(errs...)
}

func validateWebhookURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("parse %q: %w", raw, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q must be an absolute http(s) URL, e.g. http://127.0.0.1:8080/hubspot/webhooks", raw)
	}
	return nil
}

// Faults are injected failures. Probabilities are per API request (control
// paths under /_sim/ are exempt) and lie in 0..1; the Error* probabilities
// are exclusive alternatives, so their sum must not exceed 1.
type Faults struct {
	// Error500 answers 500 with HubSpot's error JSON (category INTERNAL_ERROR).
	Error500 float64
	// Error502 answers 502 with an HTML body, as a failing edge proxy does.
	Error502 float64
	// Error503 answers 503 with error JSON.
	Error503 float64
	// Error423 answers 423 Locked (HubSpot asks clients to wait at least 2 s).
	Error423 float64
	// Error429 answers a TEN_SECONDLY_ROLLING 429 without the window being full.
	Error429 float64
	// Latency is added to every API request.
	Latency time.Duration
	// HangProbability makes a request answer only after HangDuration, so that
	// client timeouts fire; hanging stops when the server closes.
	HangProbability float64
	// HangDuration is how long a hanging request hangs.
	HangDuration time.Duration
	// DropProbability closes the connection without an answer; half the time
	// before the request is applied and half the time after, so clients meet
	// writes whose outcome they cannot know.
	DropProbability float64
	// PartialFailure fails each input of a batch create/update/upsert with a
	// VALIDATION_ERROR entry in a 207 answer while the other inputs succeed.
	PartialFailure float64
	// WebhookFailure makes a webhook delivery attempt count as failed (it is
	// still sent, as when HubSpot times out on a slow receiver) and retried.
	WebhookFailure float64
	// WebhookDuplicate delivers a successfully delivered batch a second time.
	WebhookDuplicate float64
}

// Validate reports every fault setting out of range, naming each by its key
// in the JSON form (PUT /_sim/faults, hubsync sim -faults): error500 is
// Error500, hangDuration is HangDuration.
func (f Faults) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"error500", f.Error500}, {"error502", f.Error502}, {"error503", f.Error503},
		{"error423", f.Error423}, {"error429", f.Error429}, {"hangProbability", f.HangProbability},
		{"dropProbability", f.DropProbability}, {"partialFailure", f.PartialFailure},
		{"webhookFailure", f.WebhookFailure}, {"webhookDuplicate", f.WebhookDuplicate},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be a probability between 0 and 1 (got %v)", p.name, p.v))
		}
	}
	if sum := f.Error500 + f.Error502 + f.Error503 + f.Error423 + f.Error429; sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("error500+error502+error503+error423+error429 must not exceed 1 (got %v); lower them", sum))
	}
	if f.Latency < 0 || f.HangDuration < 0 {
		errs = append(errs, errors.New("latency and hangDuration must not be negative"))
	}
	if f.HangProbability > 0 && f.HangDuration == 0 {
		errs = append(errs, errors.New(`hangProbability needs a hangDuration; set one (e.g. "30s")`))
	}
	return errors.Join(errs...)
}

// faultsJSON is the wire form of Faults for /_sim/faults: durations are Go
// duration strings such as "250ms".
type faultsJSON struct {
	Error500         float64 `json:"error500"`
	Error502         float64 `json:"error502"`
	Error503         float64 `json:"error503"`
	Error423         float64 `json:"error423"`
	Error429         float64 `json:"error429"`
	Latency          string  `json:"latency"`
	HangProbability  float64 `json:"hangProbability"`
	HangDuration     string  `json:"hangDuration"`
	DropProbability  float64 `json:"dropProbability"`
	PartialFailure   float64 `json:"partialFailure"`
	WebhookFailure   float64 `json:"webhookFailure"`
	WebhookDuplicate float64 `json:"webhookDuplicate"`
}

// MarshalJSON writes Faults with camelCase names and duration strings.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{
		Error500: f.Error500, Error502: f.Error502, Error503: f.Error503, Error423: f.Error423,
		Error429: f.Error429, Latency: f.Latency.String(), HangProbability: f.HangProbability,
		HangDuration: f.HangDuration.String(), DropProbability: f.DropProbability,
		PartialFailure: f.PartialFailure, WebhookFailure: f.WebhookFailure, WebhookDuplicate: f.WebhookDuplicate,
	})
}

// UnmarshalJSON reads the form written by MarshalJSON; missing fields are
// zero, and an unknown one (a misspelt fault) is an error naming it.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("unknown fault %s; the faults are the fields of GET /_sim/faults (e.g. error500, error429, latency)", name)
		}
		return err
	}
	parse := func(name, s string) (time.Duration, error) {
		if s == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%s: %w (write e.g. \"250ms\")", name, err)
		}
		return d, nil
	}
	lat, err := parse("latency", j.Latency)
	if err != nil {
		return err
	}
	hang, err := parse("hangDuration", j.HangDuration)
	if err != nil {
		return err
	}
	*f = Faults{
		Error500: j.Error500, Error502: j.Error502, Error503: j.Error503, Error423: j.Error423,
		Error429: j.Error429, Latency: lat, HangProbability: j.HangProbability, HangDuration: hang,
		DropProbability: j.DropProbability, PartialFailure: j.PartialFailure,
		WebhookFailure: j.WebhookFailure, WebhookDuplicate: j.WebhookDuplicate,
	}
	return nil
}
