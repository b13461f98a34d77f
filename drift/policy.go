package drift

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Policy says what a scan does with an ambiguous difference of an object
// type: one where both sides changed since they last agreed, so no
// timestamp says which change is the one to keep.
type Policy string

// Policies. Differences with a clear verdict (one side newer) are repaired
// towards the newer side under every policy but PolicyReportOnly.
const (
	// PolicyReport (the default, "") reports ambiguous differences and
	// repairs nothing of them.
	PolicyReport Policy = ""
	// PolicyReportOnly repairs nothing at all: every difference is reported.
	PolicyReportOnly Policy = "report_only"
	// PolicyHubSpotWins applies HubSpot's value to ambiguous differences.
	PolicyHubSpotWins Policy = "hubspot_wins"
	// PolicyLocalWins sends the local value to HubSpot.
	PolicyLocalWins Policy = "local_wins"
	// PolicyNewestWins keeps the value written last, by the local field
	// clock and HubSpot's property history timestamp.
	PolicyNewestWins Policy = "newest_wins"
)

// ErrInvalidPolicy is wrapped by the errors of ParsePolicy and ParsePolicies.
var ErrInvalidPolicy = errors.New("drift: invalid policy")

var policies = []Policy{PolicyReportOnly, PolicyHubSpotWins, PolicyLocalWins, PolicyNewestWins}

// ParsePolicy parses a policy name: report (or ""), report_only,
// hubspot_wins, local_wins or newest_wins.
func ParsePolicy(s string) (Policy, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "report" {
		return PolicyReport, nil
	}
	if p := Policy(s); slices.Contains(policies, p) {
		return p, nil
	}
	return "", fmt.Errorf("%w: %q; use report, report_only, hubspot_wins, local_wins or newest_wins", ErrInvalidPolicy, s)
}

var objectTypeRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,49}$`)

// ParsePolicies parses per-object policies written as
// "contacts=hubspot_wins,deals=report_only" (spaces around the parts are
// allowed). An object type listed twice, a malformed part or an unknown
// policy is an error naming it.
func ParsePolicies(s string) (map[string]Policy, error) {
	out := map[string]Policy{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		obj, pol, ok := strings.Cut(part, "=")
		obj = strings.TrimSpace(obj)
		if !ok || !objectTypeRE.MatchString(obj) {
			return nil, fmt.Errorf("%w: %q is not OBJECT=POLICY (e.g. contacts=hubspot_wins)", ErrInvalidPolicy, strings.TrimSpace(part))
		}
		p, err := ParsePolicy(pol)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", obj, err)
		}
		if _, dup := out[obj]; dup {
			return nil, fmt.Errorf("%w: %s is given twice", ErrInvalidPolicy, obj)
		}
		out[obj] = p
	}
	return out, nil
}
