package demo

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/mapping"
)

// LocalRecord is a live local record with its HubSpot id ("" when not linked).
type LocalRecord struct {
	ObjectType string
	ID         string
	Fields     map[string]any
	HubSpotID  string
}

// Problem names a kind of difference.
type Problem string

// The differences Compare finds.
const (
	// ProblemField: a mapped property differs between the two sides.
	ProblemField Problem = "field differs"
	// ProblemNotInHubSpot: a live local record has no live HubSpot object.
	ProblemNotInHubSpot Problem = "missing in HubSpot"
	// ProblemNotLocal: a live HubSpot object has no live local record.
	ProblemNotLocal Problem = "missing locally"
	// ProblemDuplicateLink: two local records claim one HubSpot object.
	ProblemDuplicateLink Problem = "linked twice"
	// ProblemExpectedField: a side does not hold the value the workload wrote last.
	ProblemExpectedField Problem = "not the value written last"
	// ProblemShouldBeGone: a record the workload deleted (or merged away) is
	// still live on a side.
	ProblemShouldBeGone Problem = "should be deleted"
	// ProblemShouldExist: a record the workload expects live is gone.
	ProblemShouldExist Problem = "should exist"
)

// Difference is one disagreement.
type Difference struct {
	ObjectType string
	LocalID    string
	HubSpotID  string
	Problem    Problem
	// Side is "local", "HubSpot" or "" (both).
	Side string
	// Field is the HubSpot property, for field problems.
	Field string
	// Want and Got are the values compared: local and HubSpot for
	// ProblemField, expected and actual for ProblemExpectedField.
	Want, Got string
	// Because explains an expected difference (e.g. the dead letter behind it).
	Because string
}

// String renders the difference on one line.
func (d Difference) String() string {
	id := d.ObjectType + " local=" + cmp.Or(d.LocalID, "-") + " hubspot=" + cmp.Or(d.HubSpotID, "-")
	s := fmt.Sprintf("%s: %s", id, d.Problem)
	if d.Side != "" {
		s += " (" + d.Side + ")"
	}
	if d.Field != "" {
		switch d.Problem {
		case ProblemField:
			s += fmt.Sprintf(": %s local=%q hubspot=%q", d.Field, d.Want, d.Got)
		default:
			s += fmt.Sprintf(": %s want=%q got=%q", d.Field, d.Want, d.Got)
		}
	}
	if d.Because != "" {
		s += " — " + d.Because
	}
	return s
}

// TypeSummary counts one object type's records on each side.
type TypeSummary struct {
	ObjectType string
	Local      int // live local records
	HubSpot    int // live HubSpot objects
	Equal      int // pairs equal on every mapped property
}

// Comparison is the result of Compare.
type Comparison struct {
	Types []TypeSummary
	// Differences are the disagreements that fail the demo.
	Differences []Difference
	// Explained are differences explained by a provoked dead letter.
	Explained []Difference
}

// Consistent reports whether the two sides agree.
func (c Comparison) Consistent() bool { return len(c.Differences) == 0 }

// Target says where an expected record lives: its local id, or its HubSpot id
// for records created in HubSpot (whose local id the workload never learns).
type Target struct {
	LocalID   string
	HubSpotID string
}

// State is both sides at the end of a run.
type State struct {
	// Local are the live local records of every compared type.
	Local []LocalRecord
	// HubSpot are the live HubSpot objects by local object type.
	HubSpot map[string][]hubspotsim.Object
	// Explained maps "objectType/localID" to why that record may differ (a
	// dead letter provoked on purpose).
	Explained map[string]string
}

// Compare checks that both sides agree on every mapped property of every record
// of the mapped object types in st, and that the workload's expectations hold.
// expected and targets may be nil; targets[i] locates expected[i].
func Compare(m *mapping.Set, st State, expected []Expected, targets []Target) Comparison {
	var c Comparison
	add := func(d Difference) {
		if why, ok := st.Explained[d.ObjectType+"/"+d.LocalID]; ok && d.LocalID != "" {
			d.Because = why
			c.Explained = append(c.Explained, d)
			return
		}
		c.Differences = append(c.Differences, d)
	}

	types := slices.Sorted(maps.Keys(st.HubSpot))
	for _, r := range st.Local {
		if !slices.Contains(types, r.ObjectType) {
			types = append(types, r.ObjectType)
		}
	}
	slices.Sort(types)

	localByType := map[string][]LocalRecord{}
	for _, r := range st.Local {
		localByType[r.ObjectType] = append(localByType[r.ObjectType], r)
	}
	localByID := map[string]LocalRecord{}
	localByHubSpot := map[string]LocalRecord{}
	hubspotByID := map[string]hubspotsim.Object{}

	for _, t := range types {
		obj, mapped := m.Lookup(t)
		if !mapped {
			continue
		}
		sum := TypeSummary{ObjectType: t, Local: len(localByType[t]), HubSpot: len(st.HubSpot[t])}
		remote := map[string]hubspotsim.Object{}
		for _, o := range st.HubSpot[t] {
			remote[o.ID] = o
			hubspotByID[t+"/"+o.ID] = o
		}
		claimed := map[string]string{}
		for _, r := range localByType[t] {
			localByID[t+"/"+r.ID] = r
			if r.HubSpotID == "" {
				add(Difference{ObjectType: t, LocalID: r.ID, Problem: ProblemNotInHubSpot, Side: "HubSpot"})
				continue
			}
			localByHubSpot[t+"/"+r.HubSpotID] = r
			if prev, dup := claimed[r.HubSpotID]; dup {
				add(Difference{ObjectType: t, LocalID: r.ID, HubSpotID: r.HubSpotID, Problem: ProblemDuplicateLink, Because: "also linked to local " + prev})
				continue
			}
			claimed[r.HubSpotID] = r.ID
			o, ok := remote[r.HubSpotID]
			if !ok {
				add(Difference{ObjectType: t, LocalID: r.ID, HubSpotID: r.HubSpotID, Problem: ProblemNotInHubSpot, Side: "HubSpot"})
				continue
			}
			props, err := obj.ToHubSpot(r.Fields)
			if err != nil {
				add(Difference{ObjectType: t, LocalID: r.ID, HubSpotID: r.HubSpotID, Problem: ProblemField, Because: err.Error()})
				continue
			}
			equal := true
			for _, p := range obj.HubSpotProperties() {
				if lv, hv := props[p], o.Properties[p]; lv != hv {
					equal = false
					add(Difference{ObjectType: t, LocalID: r.ID, HubSpotID: o.ID, Problem: ProblemField, Field: p, Want: lv, Got: hv})
				}
			}
			if equal {
				sum.Equal++
			}
		}
		for _, o := range st.HubSpot[t] {
			if _, ok := claimed[o.ID]; !ok {
				add(Difference{ObjectType: t, HubSpotID: o.ID, Problem: ProblemNotLocal, Side: "local"})
			}
		}
		c.Types = append(c.Types, sum)
	}

	for i, e := range expected {
		if i >= len(targets) {
			break
		}
		tg := targets[i]
		t := e.Spec.ObjectType
		obj, mapped := m.Lookup(t)
		if !mapped {
			continue
		}
		var (
			lr      LocalRecord
			haveLoc bool
			hs      hubspotsim.Object
			haveHS  bool
		)
		hsID := tg.HubSpotID
		if tg.LocalID != "" {
			lr, haveLoc = localByID[t+"/"+tg.LocalID]
			if haveLoc && hsID == "" {
				hsID = lr.HubSpotID
			}
		} else if tg.HubSpotID != "" {
			lr, haveLoc = localByHubSpot[t+"/"+tg.HubSpotID]
		}
		if hsID != "" {
			hs, haveHS = hubspotByID[t+"/"+hsID]
		}
		localID := cmp.Or(tg.LocalID, lr.ID)
		if !e.Live {
			if haveLoc {
				add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemShouldBeGone, Side: "local"})
			}
			if haveHS {
				add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemShouldBeGone, Side: "HubSpot"})
			}
			continue
		}
		if tg.LocalID == "" && tg.HubSpotID == "" {
			add(Difference{ObjectType: t, Problem: ProblemShouldExist, Because: fmt.Sprintf("workload record %d was never created", e.Ref)})
			continue
		}
		if !haveLoc {
			add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemShouldExist, Side: "local"})
		}
		if !haveHS {
			add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemShouldExist, Side: "HubSpot"})
		}
		// Check HubSpot against the workload; the local side is checked
		// against HubSpot above, so it follows.
		if haveHS {
			for _, p := range obj.HubSpotProperties() {
				if want, got := e.Props[p], hs.Properties[p]; want != got {
					add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemExpectedField, Side: "HubSpot", Field: p, Want: want, Got: got})
				}
			}
		} else if haveLoc {
			props, _ := obj.ToHubSpot(lr.Fields)
			for _, p := range obj.HubSpotProperties() {
				if want, got := e.Props[p], props[p]; want != got {
					add(Difference{ObjectType: t, LocalID: localID, HubSpotID: hsID, Problem: ProblemExpectedField, Side: "local", Field: p, Want: want, Got: got})
				}
			}
		}
	}
	return c
}
