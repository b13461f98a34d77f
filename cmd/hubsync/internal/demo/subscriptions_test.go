package demo

import (
	"fmt"
	"strings"
	"testing"
)

// TestSubscriptionReportSkipped: a run that sends no subscription requests
// (hubsync chaos) says so and is not judged on them, while a demo run that
// accepted none fails.
func TestSubscriptionReportSkipped(t *testing.T) {
	if (SubscriptionReport{}).OK() {
		t.Fatal("a run that accepted no subscription request is OK; want it judged a failure")
	}
	r := SubscriptionReport{Skipped: "records only"}
	if !r.OK() {
		t.Fatal("a skipped subscription part fails the run")
	}
	var b strings.Builder
	r.write(func(f string, a ...any) { fmt.Fprintf(&b, f+"\n", a...) })
	if !strings.Contains(b.String(), "not part of this run (records only)") || strings.Contains(b.String(), "accepted") {
		t.Fatalf("report:\n%s", b.String())
	}
}
