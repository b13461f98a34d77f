package qstashsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// RetryAfterMax caps a worker's Retry-After, as QStash does.
const RetryAfterMax = 24 * time.Hour

// delayMax bounds Upstash-Delay and Upstash-Timeout so that arithmetic on
// them cannot overflow.
const delayMax = 365 * 24 * time.Hour

// FlowControl is the parsed Upstash-Flow-Control-Value of a key. Zero
// Parallelism or Rate means that limit is not set.
type FlowControl struct {
	// Parallelism is the most deliveries of the key in flight at once.
	Parallelism int
	// Rate is the most deliveries of the key started per Period.
	Rate int
	// Period is the window of Rate (default one second, as QStash's).
	Period time.Duration
}

// flowControlJSON is the wire form of FlowControl in the stats.
type flowControlJSON struct {
	Parallelism int    `json:"parallelism,omitempty"`
	Rate        int    `json:"rate,omitempty"`
	Period      string `json:"period,omitempty"`
}

// MarshalJSON writes the period as a duration string ("10s").
func (fc FlowControl) MarshalJSON() ([]byte, error) {
	w := flowControlJSON{Parallelism: fc.Parallelism, Rate: fc.Rate}
	if fc.Period > 0 {
		w.Period = fc.Period.String()
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the form MarshalJSON writes.
func (fc *FlowControl) UnmarshalJSON(b []byte) error {
	var w flowControlJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var d time.Duration
	if w.Period != "" {
		var err error
		if d, err = time.ParseDuration(w.Period); err != nil {
			return fmt.Errorf("period: %w", err)
		}
	}
	*fc = FlowControl{Parallelism: w.Parallelism, Rate: w.Rate, Period: d}
	return nil
}

// FlowControlPeriodDefault is the period of a rate given without one.
const FlowControlPeriodDefault = time.Second

// ParseFlowControlValue parses an Upstash-Flow-Control-Value such as
// "parallelism=12, rate=150, period=10s". Keys are case-insensitive; at least
// one of parallelism and rate must be given. A period without a rate is
// accepted and has no effect (clients such as hubsync's send their default
// period whatever the rate).
func ParseFlowControlValue(v string) (FlowControl, error) {
	var fc FlowControl
	seen := map[string]bool{}
	if strings.TrimSpace(v) == "" {
		return fc, errors.New("empty; write e.g. \"parallelism=12, rate=150, period=10s\"")
	}
	for part := range strings.SplitSeq(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		k = strings.ToLower(strings.TrimSpace(k))
		val = strings.TrimSpace(val)
		if !ok || k == "" || val == "" {
			return FlowControl{}, fmt.Errorf("%q is not key=value", strings.TrimSpace(part))
		}
		if seen[k] {
			return FlowControl{}, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		switch k {
		case "parallelism", "rate":
			n, err := strconv.Atoi(val)
			if err != nil || n <= 0 || n > 1_000_000 {
				return FlowControl{}, fmt.Errorf("%s=%q must be a whole number from 1 to 1000000", k, val)
			}
			if k == "parallelism" {
				fc.Parallelism = n
			} else {
				fc.Rate = n
			}
		case "period":
			d, err := ParseDelay(val)
			if err != nil || d <= 0 {
				return FlowControl{}, fmt.Errorf("period=%q must be a positive duration such as 10s, 1m or 1d", val)
			}
			if d > 7*24*time.Hour {
				return FlowControl{}, fmt.Errorf("period=%q is longer than a week", val)
			}
			fc.Period = d
		default:
			return FlowControl{}, fmt.Errorf("unknown key %q; use parallelism, rate and period", k)
		}
	}
	if fc.Parallelism == 0 && fc.Rate == 0 {
		return FlowControl{}, errors.New("needs parallelism or rate")
	}
	if fc.Rate > 0 && fc.Period == 0 {
		fc.Period = FlowControlPeriodDefault
	}
	return fc, nil
}

// ParseDelay parses the durations of Upstash-Delay, Upstash-Timeout and the
// flow-control period: a Go duration ("10s", "1m30s", "250ms") or whole days
// ("2d"). It needs a unit and must not be negative.
func ParseDelay(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	var d time.Duration
	if n, ok := strings.CutSuffix(v, "d"); ok && n != "" && !strings.ContainsFunc(n, func(r rune) bool { return !unicode.IsDigit(r) }) {
		days, err := strconv.Atoi(n)
		if err != nil || days > 365 {
			return 0, fmt.Errorf("%q: at most 365d", v)
		}
		d = time.Duration(days) * 24 * time.Hour
	} else {
		var err error
		d, err = time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 10s, 5m, 2h or 1d", v)
		}
	}
	if d < 0 {
		return 0, fmt.Errorf("%q must not be negative", v)
	}
	if d > delayMax {
		return 0, fmt.Errorf("%q is longer than 365d", v)
	}
	return d, nil
}

// ParseRetryAfter reads a worker's Retry-After: whole seconds, an HTTP date
// (RFC 1123) or a Go duration such as "6m5s". The wait is capped at
// RetryAfterMax; a date in the past is no wait. ok is false for a value that
// is none of these.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(RetryAfterMax/time.Second) {
			return RetryAfterMax, true
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), RetryAfterMax), true
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return min(d, RetryAfterMax), true
	}
	return 0, false
}

// DefaultBackoff is QStash's delay before retry n (1 for the first):
// min(86400, e^(2.5·n)) seconds.
func DefaultBackoff(n int) time.Duration {
	s := math.Min(86400, math.Exp(2.5*float64(n)))
	return time.Duration(s * float64(time.Second))
}

// RetryDelay is a compiled Upstash-Retry-Delay expression: milliseconds as a
// function of retried, the number of retries done so far (0 before the first).
type RetryDelay struct {
	src  string
	root node
}

// retryDelayMaxLen bounds the expression text.
const retryDelayMaxLen = 512

// ParseRetryDelay compiles an Upstash-Retry-Delay expression such as
// "pow(2, retried) * 1000": numbers, retried, + - * / and parentheses, and
// the functions pow, sqrt, abs, exp, floor, ceil, round, min and max.
func ParseRetryDelay(expr string) (*RetryDelay, error) {
	if len(expr) > retryDelayMaxLen {
		return nil, fmt.Errorf("longer than %d characters", retryDelayMaxLen)
	}
	p := &exprParser{src: expr}
	n, err := p.parseExpr(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q at %d", p.src[p.pos:], p.pos)
	}
	return &RetryDelay{src: expr, root: n}, nil
}

// String returns the expression as written.
func (r *RetryDelay) String() string { return r.src }

// Delay evaluates the expression for retried, clamped to [0, 1 day]; a
// result that is not a number is no wait.
func (r *RetryDelay) Delay(retried int) time.Duration {
	ms := r.root.eval(float64(retried))
	if math.IsNaN(ms) || ms <= 0 {
		return 0
	}
	if ms >= float64(RetryAfterMax/time.Millisecond) {
		return RetryAfterMax
	}
	return time.Duration(ms * float64(time.Millisecond))
}

type node interface{ eval(retried float64) float64 }

type numNode float64
type varNode struct{}
type unaryNode struct{ x node }
type binNode struct {
	op   byte
	l, r node
}
type callNode struct {
	fn   string
	args []node
}

func (n numNode) eval(float64) float64     { return float64(n) }
func (varNode) eval(r float64) float64     { return r }
func (n unaryNode) eval(r float64) float64 { return -n.x.eval(r) }
func (n binNode) eval(r float64) float64 {
	a, b := n.l.eval(r), n.r.eval(r)
	switch n.op {
	case '+':
		return a + b
	case '-':
		return a - b
	case '*':
		return a * b
	default:
		return a / b
	}
}
func (n callNode) eval(r float64) float64 {
	v := make([]float64, len(n.args))
	for i, a := range n.args {
		v[i] = a.eval(r)
	}
	switch n.fn {
	case "pow":
		return math.Pow(v[0], v[1])
	case "sqrt":
		return math.Sqrt(v[0])
	case "abs":
		return math.Abs(v[0])
	case "exp":
		return math.Exp(v[0])
	case "floor":
		return math.Floor(v[0])
	case "ceil":
		return math.Ceil(v[0])
	case "round":
		return math.Round(v[0])
	case "min":
		m := v[0]
		for _, x := range v[1:] {
			m = math.Min(m, x)
		}
		return m
	default: // max
		m := v[0]
		for _, x := range v[1:] {
			m = math.Max(m, x)
		}
		return m
	}
}

// arity is each function's argument count; -1 means one or more.
var arity = map[string]int{"pow": 2, "sqrt": 1, "abs": 1, "exp": 1, "floor": 1, "ceil": 1, "round": 1, "min": -1, "max": -1}

// exprDepthMax bounds nesting so that a hostile header cannot exhaust the stack.
const exprDepthMax = 32

type exprParser struct {
	src string
	pos int
}

func (p *exprParser) skipSpace() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

func (p *exprParser) parseExpr(depth int) (node, error) {
	if depth > exprDepthMax {
		return nil, fmt.Errorf("nested deeper than %d", exprDepthMax)
	}
	l, err := p.parseTerm(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || (p.src[p.pos] != '+' && p.src[p.pos] != '-') {
			return l, nil
		}
		op := p.src[p.pos]
		p.pos++
		r, err := p.parseTerm(depth)
		if err != nil {
			return nil, err
		}
		l = binNode{op: op, l: l, r: r}
	}
}

func (p *exprParser) parseTerm(depth int) (node, error) {
	l, err := p.parseUnary(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.src) || (p.src[p.pos] != '*' && p.src[p.pos] != '/') {
			return l, nil
		}
		op := p.src[p.pos]
		p.pos++
		r, err := p.parseUnary(depth)
		if err != nil {
			return nil, err
		}
		l = binNode{op: op, l: l, r: r}
	}
}

func (p *exprParser) parseUnary(depth int) (node, error) {
	p.skipSpace()
	if p.pos < len(p.src) && (p.src[p.pos] == '-' || p.src[p.pos] == '+') {
		neg := p.src[p.pos] == '-'
		p.pos++
		if depth+1 > exprDepthMax {
			return nil, fmt.Errorf("nested deeper than %d", exprDepthMax)
		}
		x, err := p.parseUnary(depth + 1)
		if err != nil || !neg {
			return x, err
		}
		return unaryNode{x: x}, nil
	}
	return p.parsePrimary(depth)
}

func (p *exprParser) parsePrimary(depth int) (node, error) {
	p.skipSpace()
	if p.pos >= len(p.src) {
		return nil, errors.New("unexpected end of expression")
	}
	c := p.src[p.pos]
	switch {
	case c == '(':
		p.pos++
		n, err := p.parseExpr(depth + 1)
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != ')' {
			return nil, fmt.Errorf("missing ) at %d", p.pos)
		}
		p.pos++
		return n, nil
	case c >= '0' && c <= '9' || c == '.':
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] >= '0' && p.src[p.pos] <= '9' || p.src[p.pos] == '.') {
			p.pos++
		}
		f, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", p.src[start:p.pos])
		}
		return numNode(f), nil
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] >= 'a' && p.src[p.pos] <= 'z' || p.src[p.pos] >= 'A' && p.src[p.pos] <= 'Z') {
			p.pos++
		}
		name := p.src[start:p.pos]
		if name == "retried" {
			return varNode{}, nil
		}
		want, ok := arity[name]
		if !ok {
			return nil, fmt.Errorf("unknown name %q; use retried or pow, sqrt, abs, exp, floor, ceil, round, min, max", name)
		}
		p.skipSpace()
		if p.pos >= len(p.src) || p.src[p.pos] != '(' {
			return nil, fmt.Errorf("%s needs (", name)
		}
		p.pos++
		var args []node
		for {
			a, err := p.parseExpr(depth + 1)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			p.skipSpace()
			if p.pos < len(p.src) && p.src[p.pos] == ',' {
				p.pos++
				continue
			}
			if p.pos < len(p.src) && p.src[p.pos] == ')' {
				p.pos++
				break
			}
			return nil, fmt.Errorf("missing ) after the arguments of %s", name)
		}
		if (want >= 0 && len(args) != want) || len(args) > 16 {
			return nil, fmt.Errorf("%s takes %d arguments, got %d", name, want, len(args))
		}
		return callNode{fn: name, args: args}, nil
	}
	return nil, fmt.Errorf("unexpected %q at %d", string(c), p.pos)
}
