package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/dispatch"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/migrate"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/relay"
	"github.com/hubsync/hubsync/store"
)

// The lifecycle errors every hubsync service returns; they are the same
// values in every package (server.ErrStarted == outbound.ErrStarted).
var (
	// ErrStarted is returned by Start on a running Server.
	ErrStarted = startstop.ErrStarted
	// ErrStopped is returned by Start on a Server that was stopped: a Server runs once.
	ErrStopped = startstop.ErrStopped
)

// readyTimeout bounds the database checks of GET /readyz.
const readyTimeout = 5 * time.Second

// part is one switchable piece of the service.
type part struct {
	name  string
	start func(ctx context.Context) error
	stop  func(ctx context.Context) error
}

// Server is a running hubsync service. Create it with New, run it with Start,
// stop it with Stop (or by cancelling Start's context) and wait with Wait.
type Server struct {
	cfg Config
	log *slog.Logger
	svc startstop.Service

	mu       sync.Mutex // guards Start's build and the fields it sets
	db       *hubsync.DB
	st       store.Store
	in       *instruments
	failures *authFailures
	zone     *time.Location // the HubSpot account's, whose midnight resets the daily limit
	// newerSchema warns once that readyz found a schema newer than the binary's.
	newerSchema sync.Once
	bus         *relay.Bus
	ln          net.Listener
	http        *http.Server
	metricsLn   net.Listener // Config.MetricsAddr's; nil without one
	metricsHTTP *http.Server
	parts       []part // in start order
	// outboundCycles is the polling outbound worker's Concurrency, logged
	// when the server starts serving; 0 without one.
	outboundCycles int
	err            error
	errOnce        sync.Once
}

// New validates cfg and returns a Server that is not yet running. Every
// configuration error names its setting and the fix.
func New(cfg Config) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Server{cfg: cfg, log: cfg.Logger, bus: relay.NewBus()}, nil
}

// Start opens the database, checks (SQLite: applies) the migrations, builds the
// enabled parts, listens on Config.Addr and starts everything in the
// background; it returns once the service is up, or with the first error (and
// nothing left running); ErrStarted when it runs already, ErrStopped after
// Stop. Unlike the services it is made of, the Server treats the end of ctx
// as a graceful stop, as Stop does, within Config.DrainTimeout: ctx is the
// process's signal context, and the first signal drains (a second one is the
// CLI's abort).
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.svc.CanStart(); err != nil {
		return err
	}
	if err := s.build(ctx); err != nil {
		s.closeDB()
		return err
	}
	// Parts run under a context of their own: the caller's ctx asks for a
	// graceful stop, which must not cancel the work it is draining.
	runCtx := context.WithoutCancel(ctx)
	for i, p := range s.parts {
		if err := p.start(runCtx); err != nil {
			stopCtx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
			for j := i - 1; j >= 0; j-- {
				_ = s.parts[j].stop(stopCtx)
			}
			cancel()
			s.ln.Close()
			if s.metricsLn != nil {
				s.metricsLn.Close()
			}
			s.closeDB()
			_ = s.svc.Stop(context.Background()) // never started: a Server runs once
			return fmt.Errorf("start %s: %w", p.name, err)
		}
	}
	httpFailed := make(chan struct{})
	var failOnce sync.Once
	serve := func(name string, srv *http.Server, ln net.Listener) {
		err := srv.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.setErr(fmt.Errorf("%s: %w", name, err))
			failOnce.Do(func() { close(httpFailed) })
		}
	}
	go serve("http", s.http, s.ln)
	if s.metricsHTTP != nil {
		go serve("metrics http", s.metricsHTTP, s.metricsLn)
	}
	// run waits for a reason to stop, then drains. Its context is cancelled
	// only by a hard stop (a Stop whose context ended): that cuts the drain
	// short.
	run := func(hardCtx context.Context, stop <-chan struct{}) {
		select {
		case <-stop:
		case <-ctx.Done():
			s.log.Info("hubsync: stopping", "drain_timeout", s.cfg.DrainTimeout)
		case <-httpFailed:
		case <-hardCtx.Done():
		}
		s.drain(hardCtx)
	}
	if err := s.svc.Start(runCtx, run); err != nil {
		// A Stop came while Start was building: it found nothing to drain.
		s.drain(context.Background())
		return err
	}
	names := make([]string, 0, len(s.parts)+2)
	if !s.cfg.DisableWebhooks {
		names = append(names, "webhooks")
	}
	if !s.cfg.DisableAPI {
		names = append(names, "api")
	}
	for _, p := range s.parts {
		names = append(names, p.name)
	}
	attrs := []any{"addr", s.ln.Addr().String(), "database", s.db.Dialect, "parts", names}
	if s.metricsLn != nil {
		attrs = append(attrs, "metrics_addr", s.metricsLn.Addr().String())
	}
	if s.outboundCycles > 0 {
		attrs = append(attrs, "outbound_cycles", s.outboundCycles)
	}
	s.log.Info("hubsync: serving", attrs...)
	return nil
}

// drain stops every part at once under one deadline (Config.DrainTimeout, or
// earlier when ctx ends), then closes the database.
func (s *Server) drain(ctx context.Context) {
	drainCtx, cancel := context.WithTimeout(ctx, s.cfg.DrainTimeout)
	defer cancel()
	// Everything drains at once, under one deadline: the listener stops
	// accepting and finishes its requests while each worker finishes (or, at
	// the deadline, releases) its in-flight batch.
	var wg sync.WaitGroup
	for name, srv := range map[string]*http.Server{"HTTP": s.http, "metrics": s.metricsHTTP} {
		if srv == nil {
			continue
		}
		wg.Go(func() {
			if err := srv.Shutdown(drainCtx); err != nil {
				s.log.Warn("hubsync: "+name+" requests still running at the drain deadline were cut off", "err", err)
				srv.Close()
			}
		})
	}
	for _, p := range s.parts {
		wg.Go(func() {
			if err := p.stop(drainCtx); err != nil {
				s.log.Warn("hubsync: stop "+p.name+" was cut short; its unfinished work was released (or its leases will expire)", "err", err)
			}
		})
	}
	wg.Wait()
	s.closeDB()
	s.log.Info("hubsync: stopped")
}

// Addr is the listen address after Start (useful with port 0).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listenAddr(s.ln)
}

// MetricsAddr is Config.MetricsAddr's listen address after Start (useful
// with port 0); empty without one.
func (s *Server) MetricsAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return listenAddr(s.metricsLn)
}

// healthz answers GET /healthz: the process is up.
func healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// listenAddr is ln's address; empty for no listener.
func listenAddr(ln net.Listener) string {
	if ln == nil {
		return ""
	}
	return ln.Addr().String()
}

// Store is the service's (instrumented) store after Start, for embedding code
// such as the demo.
func (s *Server) Store() store.Store {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

// Bus is the in-process event bus the internal outbox relay publishes record
// events to. Subscribe before Start to see every event.
func (s *Server) Bus() *relay.Bus { return s.bus }

// Stop stops the service gracefully, every part at once under one drain
// deadline (the earlier of ctx's and Config.DrainTimeout): the listener stops
// accepting and lets in-flight requests finish, and each worker claims nothing
// more and finishes its in-flight batch, or releases it when the deadline
// passes. Then the database is closed. Stop is idempotent and safe before
// Start; it returns ctx's error when ctx ended first, else the error that
// stopped the service, if any.
func (s *Server) Stop(ctx context.Context) error {
	if err := s.svc.Stop(ctx); err != nil {
		return err
	}
	return s.Err()
}

// Wait blocks until the service has stopped and returns the error that stopped
// it, if any (nil after a graceful stop).
func (s *Server) Wait() error {
	s.svc.Wait()
	return s.Err()
}

// Done is closed when the service has stopped.
func (s *Server) Done() <-chan struct{} { return s.svc.Done() }

// Err is the error that stopped the service, if any.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Server) setErr(err error) {
	s.errOnce.Do(func() {
		s.mu.Lock()
		s.err = err
		s.mu.Unlock()
		s.log.Error("hubsync: failed", "err", err)
	})
}

func (s *Server) closeDB() {
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.log.Warn("hubsync: close database", "err", err)
		}
	}
}

// build opens the database and assembles the parts and routes. Called with s.mu held.
func (s *Server) build(ctx context.Context) error {
	cfg := s.cfg
	db, err := openChecked(ctx, cfg.DatabaseURL, cfg.Store, s.log)
	if err != nil {
		return err
	}
	s.db = db
	s.in = newInstruments(db.Store, s.log, cfg.StatsTTL)
	s.failures = newAuthFailures(s.in.authFailures, s.log, cfg.AuthFailureLogInterval)
	st := newMeteredStore(db.Store, s.in)
	s.st = st

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	if cfg.MetricsAddr == "" {
		mux.Handle("GET /metrics", s.in.handler())
	}
	rejected, err := inbound.NewRejectedLog(st)
	if err != nil {
		return err
	}
	admin := &adminAPI{token: []byte(cfg.AdminToken), failures: s.failures, st: st, rejected: rejected, reconcileAfter: cfg.ReconcileAfter, log: s.log, mapping: cfg.Mapping}
	// Every /api/… route is registered on api, never on mux: mountAPI puts the
	// whole of it behind apiGuard (bearer token, JSON writes, no foreign
	// Origin), so a new route cannot be mounted without authentication.
	api := http.NewServeMux()

	lk := links.New(st)
	var recs *records.Service
	if !cfg.DisableAPI || !cfg.DisableSyncWorker || !cfg.DisableOutboundWorker {
		if recs, err = records.New(st, lk, records.Config{ObjectTypes: cfg.Mapping.ObjectTypes(), Mapping: cfg.Mapping, Logger: s.log, TracerProvider: cfg.TracerProvider}); err != nil {
			return fmt.Errorf("records: %w", err)
		}
	}

	var client *hubspot.Client
	var bud budget.Budget
	var portal string
	var portalLater bool
	if s.zone, portal, portalLater, err = s.account(ctx); err != nil {
		return err
	}
	if cfg.callsHubSpot() {
		b, err := newBudget(db, cfg, s.zone)
		if err != nil {
			return err
		}
		if sb, ok := b.(*budget.SQL); ok {
			s.in.observeBudget(sb, cfg, s.log)
		}
		bud = meterBudget(b, s.in)
		if client, err = s.newHubSpotClient(bud); err != nil {
			return err
		}
	}

	if client != nil {
		if admin.driftRunner, err = s.driftPart(db, st, lk, recs, client, bud); err != nil {
			return err
		}
	}
	if err := s.mountUI(mux, db, st, recs, lk, client, bud); err != nil {
		return err
	}

	var syncWorker *inbound.Worker
	if !cfg.DisableSyncWorker {
		syncWorker, err = inbound.NewWorker(inbound.WorkerConfig{
			Store: st.Inbound(), Applier: recs, HubSpot: client, Budget: bud, BudgetKey: cfg.BudgetKey,
			AppID: cfg.HubSpotAppID, Mapping: cfg.Mapping, Now: st.Now, Logger: s.log, MaxEventSkew: cfg.MaxEventSkew,
			ApplyConcurrency: syncApplyConcurrency(cfg.SyncApplyConcurrency, st.Dialect()),
			TracerProvider:   cfg.TracerProvider,
		})
		if err != nil {
			return err
		}
		s.parts = append(s.parts, part{"sync-worker", syncWorker.Start, syncWorker.Stop})
	}

	var wake []notifier
	var pub *dispatch.PublishService
	if !cfg.DisableOutboundWorker {
		w, err := outbound.NewWorker(outbound.Config{
			Store: st.Outbound(), HubSpot: client, Links: lk, Budget: bud, BudgetKey: cfg.BudgetKey,
			HTTPTimeout: outboundCallTimeout(cfg.HubSpotTimeout), FillWait: cfg.OutboundFillWait, Hold: cfg.OutboundHold, Concurrency: cfg.OutboundConcurrency, BudgetAhead: cfg.OutboundBudgetAhead, Mapping: cfg.Mapping, Now: st.Now, Logger: s.log, Metrics: s.in.outbound,
			Handlers:           subscriptionHandlers(st, client, cfg.Mapping, s.log),
			OnLinkedMergedAway: inbound.Remerger(st.Inbound(), cfg.Mapping),
			LocalRecords:       recs,
			TracerProvider:     cfg.TracerProvider,
		})
		if err != nil {
			return err
		}
		if cfg.qstashMode() {
			// QStash dispatches: the worker's loops never run, the worker
			// endpoint pushes the delivered events through it.
			if pub, err = s.qstashParts(mux, st, w); err != nil {
				return err
			}
			if budgetRate := int64(cfg.RateLimit) * int64(cfg.FlowControlPeriod) / int64(10*time.Second); int64(cfg.FlowControlRate) > budgetRate {
				s.log.Warn("server: QStash may deliver faster than the HubSpot budget allows; every delivery the budget refuses is a 503 that costs a QStash attempt. Set HUBSYNC_FLOW_CONTROL_RATE at or below the budget, or leave it unset",
					"flow_control_rate", cfg.FlowControlRate, "flow_control_period", cfg.FlowControlPeriod, "budget_calls_per_period", budgetRate)
			}
			if u, err := url.Parse(cfg.WorkerURL); err == nil && u.Path != dispatch.WorkerPath {
				s.log.Warn("server: the worker URL's path is not the route this process serves QStash deliveries on; they will be answered 404 unless a proxy rewrites the path. Set HUBSYNC_WORKER_URL to https://<public host>"+dispatch.WorkerPath,
					"worker_url_path", u.Path, "route", dispatch.WorkerPath)
			}
			wake = append(wake, pub)
		} else {
			s.parts = append(s.parts, part{"outbound-worker", w.Start, w.Stop})
			s.outboundCycles = w.Concurrency()
			wake = append(wake, w)
		}
	}
	admin.sched = s.scheduler(pub)
	admin.register(mux)
	mux.Handle(CronReconcilePath, s.cronReconcile(admin.sched))

	if !cfg.DisableRelay {
		p, r, err := s.relayPart(st)
		if err != nil {
			return err
		}
		s.parts = append(s.parts, *p)
		wake = append(wake, r)
	}

	if !cfg.DisableCleanup {
		c := &cleaner{st: st, cfg: cfg.Cleanup, interval: cfg.CleanupInterval, log: s.log}
		s.parts = append(s.parts, part{"cleanup", c.Start, c.Stop})
	}

	if !cfg.DisableWebhooks {
		hooks := inbound.ReceiverHooks{OnEventRejected: func(reason string) { s.in.webhookRejected.WithLabelValues(reason).Inc() }}
		// Echoes are stored processed: they count here, and a delivery of
		// nothing else gives the SyncWorker no work to wake for.
		hooks.OnStored = func(pending, echoes int) {
			s.in.webhookEchoes.Add(float64(echoes))
			if pending > 0 && syncWorker != nil {
				syncWorker.Notify()
			}
		}
		// SQLite admits one writer; queueing deliveries in arrival order keeps
		// every one well inside HubSpot's 5 s timeout instead of letting its
		// busy-wait starve an unlucky one.
		maxStores := 0
		if st.Dialect() == store.SQLite {
			maxStores = 1
		}
		rc, err := inbound.NewReceiver(inbound.ReceiverConfig{
			Store: st.Inbound(), ClientSecret: cfg.HubSpotClientSecret, PublicURL: cfg.PublicURL,
			AppID: cfg.HubSpotAppID, PortalID: portal, Mapping: cfg.Mapping, Signatures: cfg.WebhookSignatures,
			TrustedProxies: cfg.TrustedProxies, Logger: s.log, Hooks: hooks, MaxConcurrentStores: maxStores,
			MaxEventSkew: cfg.MaxEventSkew, Rejected: rejected, TracerProvider: cfg.TracerProvider,
		})
		if err != nil {
			return err
		}
		mux.Handle(inbound.WebhookPath, s.in.instrumentWebhooks(rc))
		if portalLater {
			pl := &portalLookup{s: s, set: rc.SetPortalID}
			s.parts = append(s.parts, part{"portal-lookup", pl.start, pl.stop})
		}
	}

	if !cfg.DisableAPI {
		s.mountRecordsAPI(api, recs, wake)
		if err := s.mountSubscriptionsAPI(api, st, wake); err != nil {
			return err
		}
	}
	s.mountAPI(mux, api)

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("Addr %s: cannot listen (%v); choose a free port, e.g. 127.0.0.1:8081", cfg.Addr, err)
	}
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("MetricsAddr %s: cannot listen (%v); choose a free port, e.g. 127.0.0.1:9091", cfg.MetricsAddr, err)
		}
		mmux := http.NewServeMux()
		mmux.Handle("GET /metrics", s.in.handler())
		mmux.HandleFunc("GET /healthz", healthz)
		s.metricsLn, s.metricsHTTP = mln, s.httpServer(mmux)
	}
	s.ln, s.http = ln, s.httpServer(mux)
	return nil
}

// httpServer is an HTTP server of h with Config.HTTP's limits.
func (s *Server) httpServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           noSniff(h),
		ReadHeaderTimeout: s.cfg.HTTP.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.HTTP.ReadTimeout,
		WriteTimeout:      s.cfg.HTTP.WriteTimeout,
		IdleTimeout:       s.cfg.HTTP.IdleTimeout,
		MaxHeaderBytes:    s.cfg.HTTP.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// openChecked opens the database and makes sure its schema is current: SQLite
// is migrated here (it is embedded, nobody else would do it); the shared
// databases must have been migrated by `hubsync migrate`, once, by an operator.
func openChecked(ctx context.Context, rawURL string, sc store.Config, log *slog.Logger) (*hubsync.DB, error) {
	db, err := hubsync.Open(ctx, rawURL, sc)
	if err != nil {
		return nil, fmt.Errorf("DatabaseURL: %w", err)
	}
	if db.Dialect == store.SQLite {
		applied, err := hubsync.Migrate(ctx, db)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("migrate SQLite database: %w", err)
		}
		if len(applied) > 0 {
			log.Info("hubsync: applied migrations", "versions", applied)
		}
	}
	if err := hubsync.CheckSchema(ctx, db); err != nil {
		db.Close()
		if errors.Is(err, migrate.ErrNotMigrated) {
			return nil, fmt.Errorf("%s database: %w, with the same DatabaseURL (the server migrates only SQLite by itself)", db.Dialect, err)
		}
		return nil, fmt.Errorf("check %s schema: %w", db.Dialect, err)
	}
	return db, nil
}

// readyz answers 200 when the database is reachable and its schema current.
// Its caller is anonymous (a load balancer, anyone), so the answer is a status
// only; why the service is not ready (which can name the database user, host
// and schema versions) goes to the log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	fail := func(reason string, err error) {
		s.log.Warn("hubsync: not ready: "+reason, "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready"})
	}
	if err := s.db.SQL.PingContext(ctx); err != nil {
		fail("database unreachable", err)
		return
	}
	if err := hubsync.CheckSchema(ctx, s.db); errors.Is(err, migrate.ErrDatabaseNewer) {
		// A rolling upgrade: the new binary's migrate ran, and this replica,
		// started on the schema it knows, keeps working until it is
		// replaced. Not ready, every old replica would leave the load
		// balancer at once, before any new one can start.
		s.newerSchema.Do(func() {
			s.log.Warn("hubsync: the database schema is newer than this binary; serving until this replica is replaced by the new version", "err", err)
		})
	} else if err != nil {
		fail("migrations not current", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// noSniff tells browsers to take every answer for the Content-Type it
// declares (JSON stays JSON, never sniffed into HTML).
func noSniff(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		h.ServeHTTP(w, r)
	})
}
