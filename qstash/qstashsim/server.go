package qstashsim

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"

	"github.com/hubsync/hubsync/internal/simserve"
)

// ErrClosed means the server has been closed.
var ErrClosed = errors.New("qstashsim: server closed")

// ErrNotFound means no message or DLQ entry has the id.
var ErrNotFound = errors.New("qstashsim: not found")

// Server is a QStash emulator. Create it with New (or NewTest), serve it with
// Start, StartWith or by mounting Handler or Wrap, and always Close it: it
// runs its delivery scheduler from New on.
type Server struct {
	cfg     Config
	log     *slog.Logger
	api     *http.ServeMux // everything but publish, whose path ServeMux would clean
	closeCh chan struct{}
	ctx     context.Context // cancelled by Close; parent of deliveries
	cancel  context.CancelFunc
	once    sync.Once
	wg      sync.WaitGroup
	client  *http.Client
	tr      *http.Transport

	ln simserve.Listener

	wake chan struct{}

	// mu guards everything below; it is never held across network I/O.
	mu           sync.Mutex
	faults       Faults
	signWithNext bool
	rng          *mrand.Rand
	nextID       uint64
	msgs         map[string]*message
	dedup        map[string]dedupEntry
	dedupOrder   []dedupRef            // oldest first, for expiry
	timed        attemptHeap           // attempts not yet due, earliest first
	ready        map[string][]*attempt // due attempts by flow-control key ("" none), in due order
	seq          uint64                // orders attempts due at the same instant
	flows        map[string]*flowState
	dlq          []*dlqEntry // oldest first
	dlqSeq       uint64
	pending      int           // attempts queued or in flight
	idle         chan struct{} // closed while pending == 0
	stats        Stats
}

// New returns a Server for cfg and starts its delivery scheduler.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("qstashsim: invalid config: %w", err)
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	idle := make(chan struct{})
	close(idle)
	s := &Server{
		cfg:          cfg,
		log:          cfg.Logger,
		api:          http.NewServeMux(),
		closeCh:      make(chan struct{}),
		ctx:          ctx,
		cancel:       cancel,
		client:       &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		tr:           tr,
		wake:         make(chan struct{}, 1),
		faults:       cfg.Faults,
		signWithNext: cfg.SignWithNext,
		rng:          mrand.New(mrand.NewPCG(uint64(cfg.Seed), uint64(cfg.Seed)^0x51ed270b27d1e5a3)),
		msgs:         map[string]*message{},
		dedup:        map[string]dedupEntry{},
		flows:        map[string]*flowState{},
		ready:        map[string][]*attempt{},
		idle:         idle,
		stats:        newStats(),
	}
	s.routes()
	s.wg.Add(1)
	go s.scheduleLoop()
	return s, nil
}

// Handler serves QStash's API (/v2/publish/…, /v2/messages/…, /v2/dlq…) and
// the control API under /_sim/qstash/; other paths are 404.
func (s *Server) Handler() http.Handler { return s.Wrap(http.NotFoundHandler()) }

// Wrap serves QStash's paths (/v2/… and /_sim/qstash/…) and hands every
// other request to next, so the emulator shares an address with another
// handler: `hubsync sim -qstash` and the demo mount it in front of the HubSpot
// simulator, whose API has no /v2/ paths.
func (s *Server) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		switch {
		case strings.HasPrefix(p, publishPrefix):
			// Not through a ServeMux: it would clean the "//" of the
			// destination URL and redirect.
			if r.Method != http.MethodPost {
				w.Header().Set("Allow", http.MethodPost)
				writeError(w, http.StatusMethodNotAllowed, "publish needs POST")
				return
			}
			s.handlePublish(w, r)
		case strings.HasPrefix(p, "/v2/") || strings.HasPrefix(p, "/_sim/qstash/"):
			s.api.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves Handler in the background.
func (s *Server) Start(addr string) error { return s.StartWith(addr, http.NotFoundHandler()) }

// StartWith listens on addr and serves Wrap(next): QStash and another
// handler (the HubSpot simulator's) on one address, so QSTASH_URL is that
// simulator's base URL.
func (s *Server) StartWith(addr string, next http.Handler) error {
	return s.ln.Start(addr, s.Wrap(next), "qstashsim", s.log, ErrClosed)
}

// URL is the base URL ("http://127.0.0.1:port") after Start, else "": the
// QSTASH_URL of clients.
func (s *Server) URL() string {
	return s.ln.URL()
}

// Close stops the listener, the scheduler and deliveries in flight, and
// waits for them. Undelivered messages are dropped. It is idempotent.
func (s *Server) Close() error {
	var err error
	s.once.Do(func() {
		err = s.ln.Close()
		close(s.closeCh)
		s.cancel()
		s.wg.Wait()
		s.tr.CloseIdleConnections()
	})
	return err
}

// Token is the bearer token the API accepts.
func (s *Server) Token() string { return s.cfg.Token }

// SigningKeys returns the current and next signing keys.
func (s *Server) SigningKeys() (current, next string) {
	return s.cfg.CurrentSigningKey, s.cfg.NextSigningKey
}

// SetSignWithNext makes later deliveries signed with the next key (true) or
// the current key (false), to test that receivers accept both.
func (s *Server) SetSignWithNext(next bool) {
	s.mu.Lock()
	s.signWithNext = next
	s.mu.Unlock()
}

// SetFaults replaces the injected faults.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("qstashsim: faults: %w", err)
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

// Stats counts what the emulator saw and did since New or ResetStats.
type Stats struct {
	// Published counts accepted publishes that created a message (DLQ
	// retries included); Deduplicated counts publishes answered with an
	// existing message.
	Published    int64 `json:"published"`
	Deduplicated int64 `json:"deduplicated"`
	// Attempts counts delivery attempts, duplicates and dropped ones included.
	Attempts int64 `json:"attempts"`
	// Delivered counts messages acknowledged with a 2xx (once each).
	Delivered int64 `json:"delivered"`
	// Failed counts attempts that did not get a 2xx (dropped ones included).
	Failed int64 `json:"failed"`
	// Retried counts retries scheduled after a failed attempt.
	Retried int64 `json:"retried"`
	// RetryAfterHonoured counts retries whose delay came from Retry-After.
	RetryAfterHonoured int64 `json:"retryAfterHonoured"`
	// DLQ counts messages moved to the DLQ; NonRetryable those moved at
	// once by a 489 with Upstash-NonRetryable-Error.
	DLQ          int64 `json:"dlq"`
	NonRetryable int64 `json:"nonRetryable"`
	// Dropped, Delayed and Duplicated count injected faults.
	Dropped    int64 `json:"dropped"`
	Delayed    int64 `json:"delayed"`
	Duplicated int64 `json:"duplicated"`
	// Pending is a gauge: attempts waiting or in flight.
	Pending int64 `json:"pending"`
	// DLQSize is a gauge: entries in the DLQ now.
	DLQSize int64 `json:"dlqSize"`
	// MaxParallelism is, per flow-control key, the most deliveries seen in
	// flight at once.
	MaxParallelism map[string]int `json:"maxParallelism"`
	// MaxRatePerPeriod is, per flow-control key, the most deliveries started
	// within one period of that key.
	MaxRatePerPeriod map[string]int `json:"maxRatePerPeriod"`
	// FlowControl is each key's limits, as last published.
	FlowControl map[string]FlowControl `json:"flowControl"`
}

func newStats() Stats {
	return Stats{MaxParallelism: map[string]int{}, MaxRatePerPeriod: map[string]int{}}
}

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.MaxParallelism = maps.Clone(st.MaxParallelism)
	st.MaxRatePerPeriod = maps.Clone(st.MaxRatePerPeriod)
	st.FlowControl = map[string]FlowControl{}
	for k, f := range s.flows {
		st.FlowControl[k] = f.fc
	}
	st.Pending = int64(s.pending)
	st.DLQSize = int64(len(s.dlq))
	return st
}

// ResetStats zeroes the counters (the gauges stay).
func (s *Server) ResetStats() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats = newStats()
}

// WaitIdle returns once no delivery attempt is waiting or in flight, or
// with ctx's error, or ErrClosed once the server closes.
func (s *Server) WaitIdle(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.pending == 0 {
			s.mu.Unlock()
			return nil
		}
		ch := s.idle
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

func (s *Server) addPendingLocked(n int) {
	before := s.pending
	s.pending += n
	if before == 0 && s.pending > 0 {
		s.idle = make(chan struct{})
	}
	if before > 0 && s.pending == 0 {
		close(s.idle)
	}
}

// newIDLocked returns prefix + a unique id. The random part comes from
// crypto/rand, not the seeded fault randomness, so that a restarted emulator
// never hands out an id of an earlier run that a publisher may have stored.
func (s *Server) newIDLocked(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s%06x%s", prefix, s.nextID, strings.ToLower(rand.Text()[:16]))
}

func (s *Server) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}
