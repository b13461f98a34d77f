package store

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"time"
)

// Defaults of RetryPolicy.
const (
	MaxAttemptsDefault = 10
	BackoffBaseDefault = time.Second
	BackoffMaxDefault  = 10 * time.Minute
)

// RetryPolicy decides when a failed event is tried again and when it becomes a
// dead letter. The zero value means the defaults.
type RetryPolicy struct {
	// MaxAttempts is how many failures end in StatusFailed (dead letter).
	MaxAttempts int
	// BackoffBase is the delay after the first failure; each later failure doubles it.
	BackoffBase time.Duration
	// BackoffMax caps the delay.
	BackoffMax time.Duration
	// NoJitter turns off the random spread (tests). With jitter the delay is drawn
	// uniformly from [d/2, d], so replicas that failed together do not retry together.
	NoJitter bool
}

// WithDefaults returns p with zero fields set to their defaults.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	p.MaxAttempts = cmp.Or(p.MaxAttempts, MaxAttemptsDefault)
	p.BackoffBase = cmp.Or(p.BackoffBase, BackoffBaseDefault)
	p.BackoffMax = cmp.Or(p.BackoffMax, BackoffMaxDefault)
	return p
}

// Validate reports a policy that cannot work.
func (p RetryPolicy) Validate() error {
	switch {
	case p.MaxAttempts < 0:
		return fmt.Errorf("RetryPolicy.MaxAttempts is %d; use a positive number (0 means %d)", p.MaxAttempts, MaxAttemptsDefault)
	case p.BackoffBase < 0 || p.BackoffMax < 0:
		return fmt.Errorf("RetryPolicy backoff durations must not be negative")
	case p.BackoffMax != 0 && p.BackoffBase > p.BackoffMax:
		return fmt.Errorf("RetryPolicy.BackoffBase (%s) exceeds BackoffMax (%s); raise BackoffMax", p.BackoffBase, p.BackoffMax)
	}
	return nil
}

// Delay returns the wait after failure number retryCount (1 for the first failure).
func (p RetryPolicy) Delay(retryCount int) time.Duration {
	p = p.WithDefaults()
	d := p.BackoffBase
	for i := 1; i < retryCount && d < p.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, p.BackoffMax)
	if p.NoJitter || d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2+1)
}
