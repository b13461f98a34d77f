package qstashsim

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// The official local development values of QStash (qstash-cli dev, user 1).
// They are public and sign nothing of value; Config defaults to them so that
// an SDK configured for the dev server works against the emulator unchanged.
const (
	// TokenDefault is the only bearer token accepted when Config.Token is empty.
	TokenDefault = "eyJVc2VySUQiOiJkZWZhdWx0VXNlciIsIlBhc3N3b3JkIjoiZGVmYXVsdFBhc3N3b3JkIn0="
	// CurrentSigningKeyDefault signs deliveries when Config.CurrentSigningKey is empty.
	CurrentSigningKeyDefault = "sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r"
	// NextSigningKeyDefault is the next key when Config.NextSigningKey is empty.
	NextSigningKeyDefault = "sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs"
)

// Defaults applied to zero-valued Config fields.
const (
	// RetriesDefault is the retries of a message published without Upstash-Retries.
	RetriesDefault = 3
	// RetriesMaxDefault is the most Upstash-Retries accepted.
	RetriesMaxDefault = 100
	// DedupWindowDefault is how long a deduplication id is remembered; QStash
	// documents 10 minutes in one place and 90 days in another, and hubsync
	// must survive the shorter one.
	DedupWindowDefault = 10 * time.Minute
	// DeliveryTimeoutDefault is how long a delivery may take when the message
	// has no Upstash-Timeout.
	DeliveryTimeoutDefault = 30 * time.Second
	// BodyMaxDefault is the largest message body accepted (QStash's free-plan
	// message size).
	BodyMaxDefault = 1 << 20
)

// Config configures a Server. The zero value is usable: every zero field takes
// its default.
type Config struct {
	// Token is the only bearer token accepted by the API (default TokenDefault).
	Token string
	// CurrentSigningKey signs deliveries (default CurrentSigningKeyDefault).
	CurrentSigningKey string
	// NextSigningKey is the key after rotation (default NextSigningKeyDefault).
	NextSigningKey string
	// SignWithNext signs deliveries with NextSigningKey instead, as QStash does
	// once keys are rolled; receivers must accept it. See SetSignWithNext.
	SignWithNext bool
	// DelayScale multiplies every wait the emulator takes: retry backoff,
	// Retry-After, Upstash-Delay and Upstash-Not-Before. 0.001 turns QStash's
	// 12 s first retry into 12 ms, for tests and the demo. Recorded delays
	// (MessageInfo.Delays) stay unscaled. Flow-control periods are never
	// scaled. Default 1.
	DelayScale float64
	// DefaultRetries is the retries of a message without Upstash-Retries
	// (default RetriesDefault); set it below 0 for none.
	DefaultRetries int
	// MaxRetries is the most Upstash-Retries accepted (default RetriesMaxDefault).
	MaxRetries int
	// DedupWindow is how long a deduplication id is remembered (default
	// DedupWindowDefault), on the Now clock.
	DedupWindow time.Duration
	// DeliveryTimeout bounds a delivery without Upstash-Timeout (default
	// DeliveryTimeoutDefault).
	DeliveryTimeout time.Duration
	// BodyMax is the largest body accepted, in bytes (default BodyMaxDefault).
	BodyMax int64
	// Now is the clock of signature claims, the dedup window and message
	// timestamps; tests inject one to expire dedup ids without waiting.
	// Delivery scheduling uses the wall clock (scaled by DelayScale).
	Now func() time.Time
	// Seed seeds the randomness of faults.
	Seed int64
	// Faults are the initial injected faults; see SetFaults.
	Faults Faults
	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	c.Token = cmp.Or(c.Token, TokenDefault)
	c.CurrentSigningKey = cmp.Or(c.CurrentSigningKey, CurrentSigningKeyDefault)
	c.NextSigningKey = cmp.Or(c.NextSigningKey, NextSigningKeyDefault)
	c.DelayScale = cmp.Or(c.DelayScale, 1)
	switch {
	case c.DefaultRetries == 0:
		c.DefaultRetries = RetriesDefault
	case c.DefaultRetries < 0:
		c.DefaultRetries = 0
	}
	c.MaxRetries = cmp.Or(c.MaxRetries, RetriesMaxDefault)
	c.DedupWindow = cmp.Or(c.DedupWindow, DedupWindowDefault)
	c.DeliveryTimeout = cmp.Or(c.DeliveryTimeout, DeliveryTimeoutDefault)
	c.BodyMax = cmp.Or(c.BodyMax, BodyMaxDefault)
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
	if c.DelayScale < 0 || c.DelayScale > 1000 {
		errs = append(errs, fmt.Errorf("DelayScale must be between 0 and 1000 (got %v); use 0.001 to make QStash's seconds milliseconds", c.DelayScale))
	}
	if c.MaxRetries < 0 {
		errs = append(errs, fmt.Errorf("MaxRetries must not be negative (got %d); use 0 for the default", c.MaxRetries))
	}
	if c.DefaultRetries > cmp.Or(c.MaxRetries, RetriesMaxDefault) {
		errs = append(errs, fmt.Errorf("DefaultRetries (%d) must not exceed MaxRetries; raise MaxRetries", c.DefaultRetries))
	}
	if c.DedupWindow < 0 || c.DeliveryTimeout < 0 || c.BodyMax < 0 {
		errs = append(errs, errors.New("DedupWindow, DeliveryTimeout and BodyMax must not be negative; use 0 for the defaults"))
	}
	if c.CurrentSigningKey != "" && c.CurrentSigningKey == c.NextSigningKey {
		errs = append(errs, errors.New("CurrentSigningKey and NextSigningKey must differ, or key rotation cannot be tested"))
	}
	if err := c.Faults.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("Faults: %w", err))
	}
	return errors.Join(errs...)
}

// Faults are injected delivery failures. Probabilities are per delivery
// attempt and lie in 0..1.
type Faults struct {
	// Drop loses an attempt before it is sent, as a connection reset does:
	// the receiver sees nothing and the message is retried with backoff.
	Drop float64
	// Delay holds an attempt for DelayDuration before it is sent (while it
	// holds its flow-control slot).
	Delay float64
	// DelayDuration is how long a delayed attempt waits.
	DelayDuration time.Duration
	// Duplicate delivers a message a second time after a 2xx, with the same
	// Upstash-Message-Id and Upstash-Retried, as at-least-once delivery may.
	Duplicate float64
}

// Validate reports every fault setting out of range, naming each by its key in
// the JSON form (PUT /_sim/qstash/faults, hubsync sim -qstash-faults): drop is
// Drop, delayDuration is DelayDuration.
func (f Faults) Validate() error {
	var errs []error
	for _, p := range []struct {
		name string
		v    float64
	}{{"drop", f.Drop}, {"delay", f.Delay}, {"duplicate", f.Duplicate}} {
		if !(p.v >= 0 && p.v <= 1) {
			errs = append(errs, fmt.Errorf("%s must be a probability between 0 and 1 (got %v)", p.name, p.v))
		}
	}
	if f.DelayDuration < 0 {
		errs = append(errs, errors.New("delayDuration must not be negative"))
	}
	if f.Delay > 0 && f.DelayDuration == 0 {
		errs = append(errs, errors.New(`delay needs a delayDuration; set one (e.g. "200ms")`))
	}
	return errors.Join(errs...)
}

type faultsJSON struct {
	Drop          float64 `json:"drop"`
	Delay         float64 `json:"delay"`
	DelayDuration string  `json:"delayDuration"`
	Duplicate     float64 `json:"duplicate"`
}

// MarshalJSON writes Faults with camelCase names and a duration string.
func (f Faults) MarshalJSON() ([]byte, error) {
	return json.Marshal(faultsJSON{Drop: f.Drop, Delay: f.Delay, DelayDuration: f.DelayDuration.String(), Duplicate: f.Duplicate})
}

// UnmarshalJSON reads the form MarshalJSON writes; missing fields are zero
// and unknown fields are an error.
func (f *Faults) UnmarshalJSON(b []byte) error {
	var j faultsJSON
	if err := decodeStrict(b, &j); err != nil {
		return err
	}
	var d time.Duration
	if j.DelayDuration != "" {
		var err error
		if d, err = time.ParseDuration(j.DelayDuration); err != nil {
			return fmt.Errorf("delayDuration: %w (write e.g. \"200ms\")", err)
		}
	}
	*f = Faults{Drop: j.Drop, Delay: j.Delay, DelayDuration: d, Duplicate: j.Duplicate}
	return nil
}
