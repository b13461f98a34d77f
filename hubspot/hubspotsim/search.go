package hubspotsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

type searchFilter struct {
	PropertyName string   `json:"propertyName"`
	Operator     string   `json:"operator"`
	Value        *string  `json:"value"`
	HighValue    *string  `json:"highValue"`
	Values       []string `json:"values"`
}

type searchSort struct {
	PropertyName string `json:"propertyName"`
	Direction    string `json:"direction"`
}

type searchRequest struct {
	FilterGroups []struct {
		Filters []searchFilter `json:"filters"`
	} `json:"filterGroups"`
	Sorts      []json.RawMessage `json:"sorts"`
	Query      string            `json:"query"`
	Properties []string          `json:"properties"`
	Limit      *int              `json:"limit"`
	After      json.RawMessage   `json:"after"`
}

// Search limits HubSpot documents.
const (
	searchMaxGroups          = 5
	searchMaxFiltersPerGroup = 6
	searchMaxFilters         = 18
)

func (s *Server) handleSearch(r *http.Request, body []byte) apiResp {
	if len(body) > SearchBodyMax {
		return validationErr(fmt.Sprintf("Search request body is %d characters; at most %d are allowed", len(body), SearchBodyMax))
	}
	var in searchRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	limit := 10
	if in.Limit != nil {
		limit = *in.Limit
	}
	if limit < 0 || limit > SearchLimitMax {
		return validationErr(fmt.Sprintf("limit must be between 0 and %d (got %d)", SearchLimitMax, limit))
	}
	after := 0
	if len(in.After) > 0 && string(in.After) != "null" {
		var a string
		if err := json.Unmarshal(in.After, &a); err != nil {
			var n int
			if err2 := json.Unmarshal(in.After, &n); err2 != nil {
				return validationErr("after must be the paging cursor of a previous page")
			}
			a = strconv.Itoa(n)
		}
		n, err := strconv.Atoi(a)
		if err != nil || n < 0 {
			return validationErr("after must be the paging cursor of a previous page")
		}
		after = n
	}
	if after+limit > SearchResultsMax {
		return validationErr(fmt.Sprintf("Search can page through at most %d results", SearchResultsMax))
	}
	if len(in.FilterGroups) > searchMaxGroups {
		return validationErr(fmt.Sprintf("at most %d filterGroups are allowed", searchMaxGroups))
	}
	total := 0
	for _, g := range in.FilterGroups {
		if len(g.Filters) > searchMaxFiltersPerGroup {
			return validationErr(fmt.Sprintf("at most %d filters per filterGroup are allowed", searchMaxFiltersPerGroup))
		}
		total += len(g.Filters)
		for _, f := range g.Filters {
			if err := checkFilter(f); err != nil {
				return validationErr(err.Error())
			}
		}
	}
	if total > searchMaxFilters {
		return validationErr(fmt.Sprintf("at most %d filters are allowed in total", searchMaxFilters))
	}
	sorts, err := parseSorts(in.Sorts)
	if err != nil {
		return validationErr(err.Error())
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	var matched []*object
	for _, id := range ts.sortedIDs() {
		o := ts.objs[id]
		if o.archived || !matchQuery(o, in.Query) {
			continue
		}
		if len(in.FilterGroups) == 0 {
			matched = append(matched, o)
			continue
		}
		for _, g := range in.FilterGroups {
			if matchAll(o, g.Filters) {
				matched = append(matched, o)
				break
			}
		}
	}
	if len(sorts) > 0 {
		slices.SortStableFunc(matched, func(a, b *object) int {
			for _, srt := range sorts {
				c := compareValues(a.props[srt.PropertyName], b.props[srt.PropertyName])
				if strings.EqualFold(srt.Direction, "DESCENDING") {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
	}
	names := readProps(ts.name, in.Properties)
	results := []objectJSON{}
	for i := after; i < len(matched) && i < after+limit; i++ {
		results = append(results, render(matched[i], names))
	}
	out := map[string]any{"total": len(matched), "results": results}
	if next := after + limit; limit > 0 && next < len(matched) && next < SearchResultsMax {
		n := strconv.Itoa(next)
		out["paging"] = map[string]any{"next": map[string]string{"after": n}}
	}
	return apiResp{status: http.StatusOK, body: out}
}

func checkFilter(f searchFilter) error {
	if f.PropertyName == "" {
		return fmt.Errorf("every filter needs a propertyName")
	}
	switch f.Operator {
	case "EQ", "NEQ", "LT", "LTE", "GT", "GTE", "CONTAINS_TOKEN", "NOT_CONTAINS_TOKEN":
		if f.Value == nil {
			return fmt.Errorf("operator %s on %s needs a value", f.Operator, f.PropertyName)
		}
	case "BETWEEN":
		if f.Value == nil || f.HighValue == nil {
			return fmt.Errorf("operator BETWEEN on %s needs value and highValue", f.PropertyName)
		}
	case "IN", "NOT_IN":
		if len(f.Values) == 0 {
			return fmt.Errorf("operator %s on %s needs values", f.Operator, f.PropertyName)
		}
	case "HAS_PROPERTY", "NOT_HAS_PROPERTY":
	default:
		return fmt.Errorf("unknown filter operator %q", f.Operator)
	}
	return nil
}

func parseSorts(raw []json.RawMessage) ([]searchSort, error) {
	var out []searchSort
	for _, r := range raw {
		var srt searchSort
		if err := json.Unmarshal(r, &srt); err != nil {
			// HubSpot also accepts a bare property name, optionally "-name" for descending.
			var name string
			if err2 := json.Unmarshal(r, &name); err2 != nil {
				return nil, fmt.Errorf("sorts must be {propertyName, direction} objects")
			}
			srt.PropertyName = name
			srt.Direction = "ASCENDING"
			if n, ok := strings.CutPrefix(name, "-"); ok {
				srt.PropertyName, srt.Direction = n, "DESCENDING"
			}
		}
		if srt.PropertyName == "" {
			return nil, fmt.Errorf("every sort needs a propertyName")
		}
		out = append(out, srt)
	}
	return out, nil
}

func matchAll(o *object, filters []searchFilter) bool {
	for _, f := range filters {
		if !matchFilter(o, f) {
			return false
		}
	}
	return true
}

func matchFilter(o *object, f searchFilter) bool {
	v, has := o.props[f.PropertyName]
	has = has && v != ""
	val := ""
	if f.Value != nil {
		val = *f.Value
	}
	switch f.Operator {
	case "HAS_PROPERTY":
		return has
	case "NOT_HAS_PROPERTY":
		return !has
	case "EQ":
		return has && compareValues(v, val) == 0
	case "NEQ":
		return !has || compareValues(v, val) != 0
	case "LT":
		return has && compareValues(v, val) < 0
	case "LTE":
		return has && compareValues(v, val) <= 0
	case "GT":
		return has && compareValues(v, val) > 0
	case "GTE":
		return has && compareValues(v, val) >= 0
	case "BETWEEN":
		return has && compareValues(v, val) >= 0 && compareValues(v, *f.HighValue) <= 0
	case "IN":
		return has && slices.ContainsFunc(f.Values, func(x string) bool { return compareValues(v, x) == 0 })
	case "NOT_IN":
		return !has || !slices.ContainsFunc(f.Values, func(x string) bool { return compareValues(v, x) == 0 })
	case "CONTAINS_TOKEN":
		return has && containsToken(v, val)
	case "NOT_CONTAINS_TOKEN":
		return !has || !containsToken(v, val)
	}
	return false
}

// compareValues compares as numbers when both parse, as instants when both
// are dates (RFC 3339 or epoch ms, as HubSpot accepts either in filters),
// else as case-insensitive strings.
func compareValues(a, b string) int {
	if x, err := strconv.ParseFloat(a, 64); err == nil {
		if y, err := strconv.ParseFloat(b, 64); err == nil {
			switch {
			case x < y:
				return -1
			case x > y:
				return 1
			}
			return 0
		}
	}
	if x, ok := parseInstant(a); ok {
		if y, ok := parseInstant(b); ok {
			return x.Compare(y)
		}
	}
	return strings.Compare(strings.ToLower(a), strings.ToLower(b))
}

func parseInstant(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, true
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, true
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 100_000_000_000 {
		return time.UnixMilli(n), true
	}
	return time.Time{}, false
}

func tokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '*'
	})
}

// containsToken matches a word of v against token, where "*" in token is a
// wildcard (HubSpot's CONTAINS_TOKEN), e.g. "*@example.com" matches emails.
func containsToken(v, token string) bool {
	token = strings.ToLower(token)
	if strings.Contains(token, "*") {
		return wildcard(strings.ToLower(v), token)
	}
	for _, t := range tokens(v) {
		for _, want := range tokens(token) {
			if t == want {
				return true
			}
		}
	}
	return false
}

func wildcard(s, pattern string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, p := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, p)
		}
		j := strings.Index(s, p)
		if j < 0 {
			return false
		}
		s = s[j+len(p):]
	}
	return true
}

func matchQuery(o *object, q string) bool {
	q = strings.ToLower(strings.TrimSpace(q))
	if q == "" {
		return true
	}
	for _, k := range []string{"email", "firstname", "lastname", "phone", "company", "name", "domain", "dealname", "hs_object_id"} {
		if strings.Contains(strings.ToLower(o.props[k]), q) {
			return true
		}
	}
	return false
}
