package hubspotsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/simserve"
)

// Sentinel errors of the programmatic control API.
var (
	// ErrNotFound means the object does not exist or is archived.
	ErrNotFound = errors.New("hubspotsim: object not found")
	// ErrInvalid means the input was rejected (e.g. an invalid email).
	ErrInvalid = errors.New("hubspotsim: invalid input")
	// ErrClosed means the server has been closed.
	ErrClosed = errors.New("hubspotsim: server closed")
)

// ConflictError reports a contact email that already belongs to another
// contact, as HubSpot's 409 "Contact already exists. Existing ID: …" does.
type ConflictError struct {
	// ExistingID is the id of the contact that owns the email.
	ExistingID string
}

func (e *ConflictError) Error() string {
	return "Contact already exists. Existing ID: " + e.ExistingID
}

// Server is a simulated HubSpot account. Create it with New (or NewTest),
// serve it with Start or by mounting Handler, and always Close it: it runs a
// webhook dispatcher goroutine from New on.
type Server struct {
	cfg     Config
	log     *slog.Logger
	mux     *http.ServeMux
	closeCh chan struct{}
	ctx     context.Context // cancelled by Close; parent of webhook requests
	cancel  context.CancelFunc
	once    sync.Once
	wg      sync.WaitGroup

	ln simserve.Listener

	// mu guards everything below. Handlers hold it while they touch the store;
	// it is never held across network I/O or sleeps.
	mu         sync.Mutex
	faults     Faults
	rng        *rand.Rand
	tenSecond  int
	daily      int
	zone       *time.Location // the account's, whose midnight resets daily
	window     []time.Time    // accepted non-search requests, oldest first
	searchWin  []time.Time    // accepted search requests, oldest first
	dayKey     string
	dayCount   int
	types      map[string]*typeStore
	nextID     int64
	nextEvent  int64
	counters   Counters
	prefs      map[string]map[int64]*prefState
	optedOut   map[string]bool                // emails opted out of all email
	propDefs   map[string]map[string]Property // by normalized type, then name
	whURL      string
	whQueue    []hubspot.WebhookEvent
	whPending  int
	whIdle     chan struct{} // closed while whPending == 0
	whWake     chan struct{}
	whSem      chan struct{}
	whClient   *http.Client
	whTranport *http.Transport
	// whPaused and whDropNext make webhooks go missing on purpose (history.go).
	whPaused   bool
	whDropNext int
}

// New returns a Server for cfg and starts its webhook dispatcher.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("hubspotsim: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	idle := make(chan struct{})
	close(idle)
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		mux:        http.NewServeMux(),
		closeCh:    make(chan struct{}),
		ctx:        ctx,
		cancel:     cancel,
		faults:     cfg.Faults,
		rng:        rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x9e3779b97f4a7c15)),
		tenSecond:  cfg.TenSecondLimit,
		daily:      cfg.DailyLimit,
		zone:       zoneOf(cfg.TimeZone),
		types:      map[string]*typeStore{},
		nextID:     1000,
		prefs:      map[string]map[int64]*prefState{},
		whURL:      cfg.WebhookURL,
		whIdle:     idle,
		whWake:     make(chan struct{}, 1),
		whSem:      make(chan struct{}, cfg.WebhookConcurrency),
		whClient:   &http.Client{Transport: tr},
		whTranport: tr,
	}
	s.nextEvent = 1_000_000 + s.rng.Int64N(1_000_000)
	s.counters = newCounters()
	s.routes()
	s.wg.Add(1)
	go s.dispatchLoop()
	return s, nil
}

// Handler returns the HTTP handler serving the API and the /_sim/ control API.
// Mount it on a net/http server: dropped connections (Faults.DropProbability,
// hangs cut short by Close) hijack the connection or panic with
// http.ErrAbortHandler, which net/http handles and a bare ResponseRecorder does not.
func (s *Server) Handler() http.Handler { return s.mux }

// Start listens on addr (e.g. "127.0.0.1:0") and serves in the background.
func (s *Server) Start(addr string) error {
	return s.ln.Start(addr, s.mux, "hubspotsim", s.log, ErrClosed)
}

// URL is the base URL ("http://127.0.0.1:port") after Start, else "".
func (s *Server) URL() string {
	return s.ln.URL()
}

// Close stops the listener, hanging requests and the webhook dispatcher and
// waits for them. Undelivered webhook events are dropped. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		close(s.closeCh)
		s.cancel()
		s.wg.Wait()
		s.whTranport.CloseIdleConnections()
	})
	return err
}

// SetWebhookURL changes where webhooks go; "" stops producing events.
// Events already queued are delivered to the new URL.
func (s *Server) SetWebhookURL(u string) error {
	if err := validateWebhookURL(u); err != nil {
		return fmt.Errorf("hubspotsim: webhook URL: %w", err)
	}
	s.mu.Lock()
	s.whURL = u
	s.mu.Unlock()
	return nil
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("hubspotsim: faults: %w", err)
	}
	s.mu.Lock()
	s.faults = f
	s.mu.Unlock()
	return nil
}

// CurrentFaults returns the injected faults in force.
func (s *Server) CurrentFaults() Faults {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults
}

// SetLimits changes the ten-second and daily limits; a value ≤ 0 leaves that
// limit unchanged. Requests already counted stay counted.
func (s *Server) SetLimits(tenSecond, daily int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if tenSecond > 0 {
		s.tenSecond = tenSecond
	}
	if daily > 0 {
		s.daily = daily
	}
}

// Counters counts what the simulator saw and did since New or ResetCounters.
type Counters struct {
	// Requests counts API requests (not /_sim/), whatever their answer.
	Requests int64 `json:"requests"`
	// RequestsByPath counts API requests by "METHOD pattern", with the object
	// type and batch action filled in, e.g. "POST /crm/v3/objects/contacts/batch/upsert"
	// or "GET /crm/v3/objects/contacts/{id}".
	RequestsByPath map[string]int64 `json:"requestsByPath"`
	// RateLimited429 counts real rate-limit refusals by policy name
	// (TEN_SECONDLY_ROLLING, DAILY, SECONDLY); injected 429s are in FaultsInjected.
	RateLimited429 map[string]int64 `json:"rateLimited429"`
	// FaultsInjected counts injected faults by kind: error500, error502,
	// error503, error423, error429, latency, hang, drop, partialFailure,
	// webhookFailure, webhookDuplicate.
	FaultsInjected map[string]int64 `json:"faultsInjected"`
	// WebhooksSent counts events acknowledged by a 2xx answer.
	WebhooksSent int64 `json:"webhooksSent"`
	// WebhookDeliveries counts webhook POSTs, including retries and duplicates.
	WebhookDeliveries int64 `json:"webhookDeliveries"`
	// WebhookFailures counts failed delivery attempts (each is retried until
	// WebhookMaxAttempts).
	WebhookFailures int64 `json:"webhookFailures"`
	// WebhooksDropped counts events given up after WebhookMaxAttempts.
	WebhooksDropped int64 `json:"webhooksDropped"`
	// WebhooksSuppressed counts events never queued: made while webhooks
	// were paused, or dropped on purpose (SetWebhooks).
	WebhooksSuppressed int64 `json:"webhooksSuppressed"`
	// WebhooksPending is a gauge: events queued, in flight or awaiting retry.
	WebhooksPending int64 `json:"webhooksPending"`
	// BatchWrites counts batch create, update, upsert and archive calls that
	// reached the CRM (not refused by auth, the rate limit or a fault);
	// BatchWriteInputs counts the records they carried.
	BatchWrites      int64 `json:"batchWrites"`
	BatchWriteInputs int64 `json:"batchWriteInputs"`
	// ObjectsCreated counts objects created through the API or User* calls.
	ObjectsCreated int64 `json:"objectsCreated"`
	// Conflicts409 counts 409 answers of the API (not of /_sim/).
	Conflicts409 int64 `json:"conflicts409"`
}

func newCounters() Counters {
	return Counters{RequestsByPath: map[string]int64{}, RateLimited429: map[string]int64{}, FaultsInjected: map[string]int64{}}
}

// Counters returns a snapshot of the counters.
func (s *Server) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.counters
	c.RequestsByPath = maps.Clone(c.RequestsByPath)
	c.RateLimited429 = maps.Clone(c.RateLimited429)
	c.FaultsInjected = maps.Clone(c.FaultsInjected)
	c.WebhooksPending = int64(s.whPending)
	return c
}

// ResetCounters zeroes the counters (WebhooksPending is a gauge and stays).
func (s *Server) ResetCounters() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters = newCounters()
}

// WaitWebhooksIdle returns when no webhook event is queued, in flight or
// awaiting a retry, or with ctx's error, or ErrClosed once the server closes.
func (s *Server) WaitWebhooksIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.whPending == 0 {
			s.mu.Unlock()
			return nil
		}
		ch := s.whIdle
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closeCh:
			return ErrClosed
		}
	}
}
