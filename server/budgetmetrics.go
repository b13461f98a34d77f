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
// (today's calls and any pause after a 429, by key), read from the database at
// most once per ttl like the queue statistics.
type budgetCollector struct {
	b   *budget.SQL
	log *slog.Logger
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	at  time.Time
	u   []budget.Usage
	err error
}

var (
	descBudgetCallsToday = prometheus.NewDesc(MetricBudgetCallsToday, "HubSpot calls granted by the shared budget since midnight UTC, by key, as recorded in the database (all replicas).", []string{"key"}, nil)
	descBudgetPaused     = prometheus.NewDesc(MetricBudgetPaused, "1 while the key's budget is paused after a 429 (no replica calls HubSpot), else 0.", []string{"key"}, nil)
	descBudgetUp         = prometheus.NewDesc(MetricBudgetUp, "1 when the budget's use could be read from the database at its last reading.", nil, nil)
)

func (c *budgetCollector) load() ([]budget.Usage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && c.now().Sub(c.at) < c.ttl {
		return c.u, c.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), statsTimeout)
	defer cancel()
	c.u, c.err = c.b.Usage(ctx)
	c.at = c.now()
	if c.err != nil {
		c.log.Warn("metrics: read budget use", "err", c.err)
	}
	return c.u, c.err
}

// Describe implements prometheus.Collector.
func (c *budgetCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBudgetCallsToday
	ch <- descBudgetPaused
	ch <- descBudgetUp
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
