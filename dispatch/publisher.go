package dispatch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hubsync/hubsync/internal/service"
	"github.com/hubsync/hubsync/internal/startstop"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/store"
)

// Defaults of PublisherConfig.
const (
	BatchSizeDefault    = 100
	PollIntervalDefault = time.Second
	// PublishLeaseDefault is how long a claimed batch is the publisher's: a
	// publisher that dies holding it leaves it to the next claim after this.
	PublishLeaseDefault = 2 * time.Minute
	// ConcurrencyDefault is how many publishes of a batch run at once.
	ConcurrencyDefault = 8
)

// Publisher is a QStash publish client; *qstash.Client is one.
type Publisher interface {
	Publish(ctx context.Context, m qstash.Message) (qstash.PublishResult, error)
}

var _ Publisher = (*qstash.Client)(nil)

// PublisherConfig configures a PublishService. Store, QStash and WorkerURL
// are required.
type PublisherConfig struct {
	Store store.Store
	// QStash publishes; usually a *qstash.Client.
	QStash Publisher
	// WorkerURL is the public URL of the worker endpoint.
	WorkerURL string
	// Destination is the outbound queue key; default "hubspot".
	Destination string
	// FlowControl is sent with every message; zero Key sends none.
	FlowControl qstash.FlowControl
	// Retries is Upstash-Retries; 0 means qstash.RetriesDefault, negative
	// none.
	Retries int
	// RetryDelay is Upstash-Retry-Delay (milliseconds expression); empty
	// keeps QStash's default backoff.
	RetryDelay string
	// BatchSize is how many events one cycle claims; default BatchSizeDefault.
	BatchSize int
	// Concurrency is how many publishes run at once; default ConcurrencyDefault.
	Concurrency int
	// LeaseDuration is the publish lease; default PublishLeaseDefault.
	LeaseDuration time.Duration
	// PollInterval is the wait after a cycle that found nothing; Notify cuts it short.
	PollInterval time.Duration
	// Retry is the backoff of failed publishes (only its delays are used: a
	// publish is retried until it succeeds).
	Retry store.RetryPolicy
	// Metrics receives counters; default a private one.
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
	Owner   string
}

func (c PublisherConfig) withDefaults() PublisherConfig {
	c.Destination = cmp.Or(c.Destination, outbox.SyncSourceHubSpot)
	c.BatchSize = cmp.Or(c.BatchSize, BatchSizeDefault)
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.LeaseDuration = cmp.Or(c.LeaseDuration, PublishLeaseDefault)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	c.Retry = c.Retry.WithDefaults()
	if c.Metrics == nil {
		c.Metrics = NewMetrics()
	}
	b := service.NewBase("publisher", service.Base{Logger: c.Logger, Now: c.Now, Owner: c.Owner})
	c.Logger, c.Now, c.Owner = b.Logger, b.Now, b.Owner
	return c
}

func (c PublisherConfig) validate() error {
	var errs []error
	if c.Store == nil {
		errs = append(errs, errors.New("PublisherConfig.Store is nil"))
	}
	if c.QStash == nil {
		errs = append(errs, errors.New("PublisherConfig.QStash is nil; pass a *qstash.Client"))
	}
	if c.WorkerURL == "" {
		errs = append(errs, errors.New("PublisherConfig.WorkerURL is empty; set it to the public URL of POST /qstash/hubspot"))
	}
	if c.BatchSize < 0 || c.Concurrency < 0 || c.LeaseDuration < 0 || c.PollInterval < 0 {
		errs = append(errs, errors.New("PublisherConfig sizes and durations must not be negative; use 0 for the defaults"))
	}
	return errors.Join(errs...)
}

// PublishService publishes due outbound events to QStash: a hubsync service
// (Start, Stop, Done, RunOnce).
type PublishService struct {
	cfg    PublisherConfig
	ps     *pubStore
	log    *slog.Logger
	notify chan struct{}
	svc    startstop.Service
}

// NewPublisher validates cfg and returns a PublishService.
func NewPublisher(cfg PublisherConfig) (*PublishService, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("dispatch: %w", err)
	}
	ps, err := newPubStore(cfg.Store)
	if err != nil {
		return nil, err
	}
	return &PublishService{cfg: cfg, ps: ps, log: cfg.Logger.With("component", "publisher", "owner", cfg.Owner), notify: make(chan struct{}, 1)}, nil
}

// Metrics returns the publisher's counters.
func (p *PublishService) Metrics() *Metrics { return p.cfg.Metrics }

// Notify wakes the publisher from its poll wait (after an enqueue, or a sweep).
func (p *PublishService) Notify() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// Start runs the publish loop in the background; see outbound.Worker.Start.
func (p *PublishService) Start(ctx context.Context) error { return p.svc.Start(ctx, p.run) }

// Stop stops the loop: the batch in flight finishes (its publishes are
// marked); when ctx ends first it is cut short, and its publish leases
// expire by themselves (a re-publish then has the same deduplication id).
func (p *PublishService) Stop(ctx context.Context) error { return p.svc.Stop(ctx) }

// Done is closed once the publisher has stopped.
func (p *PublishService) Done() <-chan struct{} { return p.svc.Done() }

func (p *PublishService) run(ctx context.Context, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		s, err := p.RunOnce(ctx)
		if err != nil && !errors.Is(err, context.Canceled) {
			p.log.Error("publish cycle failed", "err", err)
		}
		if err == nil && s.Claimed > 0 {
			continue
		}
		if !service.Idle(ctx, stop, p.notify, p.cfg.PollInterval) {
			return
		}
	}
}

// PublishSummary reports one cycle.
type PublishSummary struct {
	Claimed, Published, Deduplicated, Failed int
}

// Body is the message body the worker endpoint receives.
type Body struct {
	EventID string `json:"eventId"`
}

// RunOnce claims up to BatchSize events and publishes them: one cycle.
func (p *PublishService) RunOnce(ctx context.Context) (PublishSummary, error) {
	cs, err := p.ps.claim(ctx, p.cfg.Destination, p.cfg.BatchSize, p.cfg.LeaseDuration)
	if err != nil {
		return PublishSummary{}, err
	}
	sum := PublishSummary{Claimed: len(cs)}
	type result struct {
		dedup bool
		err   error
	}
	results := make([]result, len(cs))
	sem := make(chan struct{}, p.cfg.Concurrency)
	done := make(chan struct{})
	for i, c := range cs {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; done <- struct{}{} }()
			d, err := p.publish(ctx, c)
			results[i] = result{d, err}
		}()
	}
	for range cs {
		<-done
	}
	var errs []error
	for _, r := range results {
		switch {
		case r.err != nil:
			sum.Failed++
			errs = append(errs, r.err)
		default:
			sum.Published++
			if r.dedup {
				sum.Deduplicated++
			}
		}
	}
	if len(errs) > 0 {
		return sum, fmt.Errorf("dispatch: %d of %d publishes failed, first: %w", len(errs), len(cs), errs[0])
	}
	return sum, nil
}

// publish publishes one claimed event and records the outcome. The outcome
// is stored even when ctx ended, so that what QStash accepted is known.
func (p *PublishService) publish(ctx context.Context, c claimed) (bool, error) {
	body, _ := json.Marshal(Body{EventID: c.id})
	res, err := p.cfg.QStash.Publish(ctx, qstash.Message{
		Destination: p.cfg.WorkerURL, Body: body, DeduplicationID: DedupID(c.id, c.generation),
		Retries: p.cfg.Retries, RetryDelay: p.cfg.RetryDelay, FlowControl: p.cfg.FlowControl,
	})
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err != nil {
		p.cfg.Metrics.publishFailed.Add(1)
		delay := p.cfg.Retry.Delay(c.attempts)
		var qe *qstash.Error
		if errors.As(err, &qe) && qe.RetryAfter > delay {
			delay = qe.RetryAfter
		}
		if merr := p.ps.markRetry(sctx, c, p.cfg.Now().Add(delay), truncate(err.Error(), 500)); merr != nil && !errors.Is(merr, errFenced) {
			return false, errors.Join(err, merr)
		}
		return false, fmt.Errorf("publish %s: %w", c.id, err)
	}
	p.cfg.Metrics.published.Add(1)
	if err := p.ps.markPublished(sctx, c, res.MessageID); err != nil && !errors.Is(err, errFenced) {
		// The message is out; the publish lease expires and the next claim
		// re-publishes under the same deduplication id.
		return res.Deduplicated, err
	}
	return res.Deduplicated, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
