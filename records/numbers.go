package records

import (
	"encoding/json"
	"strconv"
	"strings"
)

// sameJSON reports whether two decoded JSON values are equal, comparing numbers
// by value: the databases respell numbers (jsonb turns 2.5e-7 into 0.00000025,
// MySQL 2.50 into 2.5), and an update that only respells one must not write a
// new version.
func sameJSON(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(string(x), string(y))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case string, bool, nil:
		return a == b
	default:
		return false // not a decoded JSON value
	}
}

func sameNumber(a, b string) bool {
	if a == b {
		return true
	}
	ca, okA := canonNumber(a)
	cb, okB := canonNumber(b)
	return okA && okB && ca == cb
}

// canonNumber spells a JSON number exactly as sign, significant digits and
// exponent ("-25e-8" for -0.00000025 and -2.50e-7), without converting it, so
// that neither precision nor a huge exponent is a problem. ok is false for a
// literal it cannot read.
func canonNumber(s string) (string, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	var exp int64
	if hasExp {
		var err error
		if exp, err = strconv.ParseInt(strings.TrimPrefix(expText, "+"), 10, 64); err != nil {
			return "", false
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", false
	}
	const limit = 1 << 60 // far from overflow when the digit counts are added
	if exp > limit || exp < -limit {
		return "", false
	}
	exp -= int64(len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", true // -0 == 0
	}
	trimmed := strings.TrimRight(digits, "0")
	exp += int64(len(digits) - len(trimmed))
	sign := ""
	if neg {
		sign = "-"
	}
	return sign + trimmed + "e" + strconv.FormatInt(exp, 10), true
}
