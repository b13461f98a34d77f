// Package testcheck holds the checked forms of the two operations that panic
// in tests: a type assertion and an index. A panic aborts the whole test
// binary and hides every later result; these fail the one test instead,
// saying what was there.
package testcheck

import "testing"

// As returns v as a T, or fails t naming what v is.
func As[T any](t testing.TB, what string, v any) T {
	t.Helper()
	x, ok := v.(T)
	if !ok {
		t.Fatalf("%s is %T (%v), want %T", what, v, v, x)
	}
	return x
}

// Index returns s[i], or fails t when s has no element i.
func Index[S ~[]E, E any](t testing.TB, what string, s S, i int) E {
	t.Helper()
	if i < 0 || i >= len(s) {
		t.Fatalf("%s has %d elements, want an element %d: %v", what, len(s), i, s)
	}
	return s[i]
}
