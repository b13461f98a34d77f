package testcheck

import "testing"

func TestAsAndIndex(t *testing.T) {
	if got := As[string](t, "the value", any("x")); got != "x" {
		t.Fatalf("As = %q", got)
	}
	if got := Index(t, "the slice", []int{4, 5}, 1); got != 5 {
		t.Fatalf("Index = %d", got)
	}
}
