package drift_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/drift"
)

func TestParsePolicies(t *testing.T) {
	got, err := drift.ParsePolicies(" contacts=hubspot_wins , deals = report_only,companies=report")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]drift.Policy{"contacts": drift.PolicyHubSpotWins, "deals": drift.PolicyReportOnly, "companies": drift.PolicyReport}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q; want %q", k, got[k], v)
		}
	}
	for _, bad := range []string{"contacts", "contacts=always", "=local_wins", "Contacts=local_wins", "contacts=local_wins,contacts=hubspot_wins", ","} {
		if _, err := drift.ParsePolicies(bad); !errors.Is(err, drift.ErrInvalidPolicy) {
			t.Errorf("ParsePolicies(%q) = %v; want ErrInvalidPolicy", bad, err)
		}
	}
	if _, err := drift.ParsePolicy("hubspot-wins"); err == nil || !strings.Contains(err.Error(), "hubspot_wins") {
		t.Errorf("a misspelt policy's error should list the valid ones: %v", err)
	}
}

func FuzzParsePolicies(f *testing.F) {
	for _, s := range []string{"", "contacts=hubspot_wins", "a=report_only,b=newest_wins", "x=", "=,=", "contacts=local_wins,contacts=local_wins"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := drift.ParsePolicies(s)
		if err != nil {
			if got != nil || !errors.Is(err, drift.ErrInvalidPolicy) {
				t.Fatalf("error %v with result %v; want ErrInvalidPolicy and nil", err, got)
			}
			return
		}
		for obj, p := range got {
			if _, err := drift.ParsePolicy(string(p)); err != nil || obj == "" || strings.ContainsAny(obj, "=, ") {
				t.Fatalf("accepted %q → %q=%q", s, obj, p)
			}
		}
	})
}
