package server

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hubsync/hubsync/budget"
)

// budgetCollector exports the shared budget's state as every replica sees it
// (today's calls, any pause after a 429, the current window's calls and
// bookings, and when it was last short, by key), read from the database at
// most once per ttl like the queue statistics.
type budgetCollector struct {
	b   *budget.SQL
	log *slog.Logger
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	at  time.Time
	u   []keyUse
	err error
}

// keyUse is one key's reading: its day (Usage) and its window (WindowUse).
type keyUse struct {
	budget.Usage
	window budget.WindowUse
}

var (
	descBudgetCallsToday = prometheus.NewDesc(MetricBudgetCallsToday, "HubSpot calls granted by the shared budget since the HubSpot account's midnight (UTC until its time zone is known), by key, as recorded in the database (all replicas).", []string{"key"}, nil)
	descBudgetPaused     = prometheus.NewDesc(MetricBudgetPaused, "1 while the key's budget is paused after a 429 (no replica calls HubSpot), else 0.", []string{"key"}, nil)
	descBudgetUp         = prometheus.NewDesc(MetricBudgetUp, "1 when the budget's use could be read from the database at its last reading.", nil, nil)
	descBudgetWindow     = prometheus.NewDesc(MetricBudgetWindowCalls, "HubSpot calls the shared budget counts in its current window (HubSpot's 10 s), by key, all replicas.", []string{"key"}, nil)
	descBudgetBooked     = prometheus.NewDesc(MetricBudgetBookedCalls, "HubSpot calls booked for a later part of the budget's window (a full window's cycles wait for them), by key, all replicas.", []string{"key"}, nil)
	descBudgetLastShort  = prometheus.NewDesc(MetricBudgetLastShort, "Unix time the shared budget last had no room at once for a call of any replica (a refusal, a booking that waited, or a holding worker's note), by key; outbound workers hold their calls for fuller batches for a while after it. Absent for a key never short.", []string{"key"}, nil)
)

func (c *budgetCollector) load() ([]keyUse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.ttl {
		return c.u, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	c.u, c.err = c.read(ctx)
	c.at = c.now()
	if c.err != nil {
		c.log.Warn("metrics: read budget use", "err", c.err)
	}
	return c.u, c.err
}

// read lists the keys with their day's use, then reads each key's window:
// one query for the list, one per key.
func (c *budgetCollector) read(ctx context.Context) ([]keyUse, error) {
	us, err := c.b.Usage(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]keyUse, len(us))
	for i, u := range us {
		w, err := c.b.WindowUse(ctx, u.Key)
		if err != nil {
			return nil, err
		}
		out[i] = keyUse{Usage: u, window: w}
	}
	return out, nil
}

// Describe implements prometheus.Collector.
func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBudgetCallsToday
	ch <- descBudgetPaused
	ch <- descBudgetUp
	ch <- descBudgetWindow
	ch <- descBudgetBooked
	ch <- descBudgetLastShort
}

// Collect implements prometheus.Collector.
func (c *budgetCollector) Collect(ch chan<- prometheus.Metric) {
	us, err := c.load()
	if err != nil {
		ch <- prometheus.MustNewConstMetric(descBudgetUp, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(descBudgetUp, prometheus.GaugeValue, 1)
	for _, u := range us {
		paused := 0.0
		if u.PausedUntil != nil {
			paused = 1
		}
		ch <- prometheus.MustNewConstMetric(descBudgetCallsToday, prometheus.GaugeValue, float64(u.CallsToday), u.Key)
		ch <- prometheus.MustNewConstMetric(descBudgetPaused, prometheus.GaugeValue, paused, u.Key)
		ch <- prometheus.MustNewConstMetric(descBudgetWindow, prometheus.GaugeValue, float64(u.window.Used), u.Key)
		ch <- prometheus.MustNewConstMetric(descBudgetBooked, prometheus.GaugeValue, float64(u.window.Booked), u.Key)
		if at := u.window.ShortAt; at != nil {
			ch <- prometheus.MustNewConstMetric(descBudgetLastShort, prometheus.GaugeValue, float64(at.UnixMicro())/1e6, u.Key)
		}
	}
}

// observeBudget registers the budget's collector and its limits.
func (in *instruments) observeBudget(b *budget.SQL, cfg Config, log *slog.Logger) {
	in.budgetLimit.WithLabelValues(cfg.BudgetKey, "10s").Set(float64(cfg.RateLimit))
	daily := cfg.DailyLimit
	if daily == 0 {
		daily = budget.DailyLimitDefault
	}
	if daily > 0 {
		in.budgetLimit.WithLabelValues(cfg.BudgetKey, "1d").Set(float64(daily))
	}
	in.reg.MustRegister(&budgetCollector{b: b, log: log, ttl: cfg.StatsTTL, now: time.Now})
}
