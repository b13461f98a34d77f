package apply_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/store"
)

// TestArrivalOrderConverges applies each HubSpot history in every order its
// webhooks could arrive in (HubSpot neither orders deliveries nor stops
// retrying a failed one for a day) and requires the outcome of applying it in
// the order it happened: the same external ids linked to live records, with
// the same fields, and no live record left unlinked. Each event carries what
// the worker hands the Applier for it: a creation or restore the whole object,
// an edit the changed properties (Partial: for an id not linked yet the worker
// reads the whole object, which the test takes from final), a deletion or
// merge none.
func TestArrivalOrderConverges(t *testing.T) {
	t.Parallel()
	merge := func(survivor string, s int, merged ...string) func() apply.Change {
		return func() apply.Change {
			ch := change(store.EventMerge, survivor, at(s), nil)
			ch.MergedIDs = merged
			return ch
		}
	}
	ev := func(kind, ext string, s int, fields map[string]any) func() apply.Change {
		return func() apply.Change { return change(kind, ext, at(s), fields) }
	}
	edit := func(ext string, s int, fields map[string]any) func() apply.Change {
		return func() apply.Change {
			ch := change(store.EventUpdate, ext, at(s), fields)
			ch.Partial = true
			return ch
		}
	}
	for _, h := range []struct {
		name string
		// history is in the order it happened at the source.
		history []func() apply.Change
		// fields compares the live records' fields too (a merge carries none,
		// so which record's fields survive it depends on what was applied).
		fields bool
		// final is what a read of each live object returns afterwards.
		final map[string]map[string]any
	}{
		{"deleted then restored", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One", "phone": "1"}),
			ev(store.EventDelete, "1", 20, nil),
			ev(store.EventRestore, "1", 30, map[string]any{"name": "Again", "phone": "1"}),
		}, true, nil},
		{"edited, deleted, restored, edited", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One", "phone": "1"}),
			edit("1", 15, map[string]any{"phone": "2"}),
			ev(store.EventDelete, "1", 20, nil),
			ev(store.EventRestore, "1", 30, map[string]any{"name": "One", "phone": "2"}),
			edit("1", 40, map[string]any{"name": "Ann"}),
		}, true, map[string]map[string]any{"1": {"name": "Ann", "phone": "2"}}},
		{"deleted twice", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One"}),
			ev(store.EventDelete, "1", 20, nil),
			ev(store.EventRestore, "1", 30, map[string]any{"name": "One"}),
			ev(store.EventDelete, "1", 40, nil),
		}, true, nil},
		{"survivor deleted after the merge", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One"}),
			ev(store.EventCreate, "2", 10, map[string]any{"name": "Two"}),
			merge("1", 20, "2"),
			ev(store.EventDelete, "1", 30, nil),
		}, false, nil},
		{"survivor merged again", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One"}),
			ev(store.EventCreate, "2", 10, map[string]any{"name": "Two"}),
			ev(store.EventCreate, "3", 10, map[string]any{"name": "Three"}),
			merge("1", 20, "2"),
			merge("3", 30, "1"),
		}, false, nil},
		{"survivor deleted and restored after the merge", []func() apply.Change{
			ev(store.EventCreate, "1", 10, map[string]any{"name": "One"}),
			ev(store.EventCreate, "2", 10, map[string]any{"name": "Two"}),
			merge("1", 20, "2"),
			ev(store.EventDelete, "1", 30, nil),
			ev(store.EventRestore, "1", 40, map[string]any{"name": "Back"}),
		}, true, nil},
	} {
		t.Run(h.name, func(t *testing.T) {
			want := outcome(t, h.history, identity(len(h.history)), h.fields, h.final)
			for _, order := range permutations(len(h.history)) {
				if got := outcome(t, h.history, order, h.fields, h.final); got != want {
					t.Errorf("arrival order %v: %s\nin the order it happened: %s", order, got, want)
				}
			}
		})
	}
}

// outcome applies the history in order and describes the live records: each
// linked external id with its fields, then how many live records no external
// id is linked to.
func outcome(t *testing.T, history []func() apply.Change, order []int, fields bool, final map[string]map[string]any) string {
	t.Helper()
	m, g := setup(t)
	for _, i := range order {
		ch := history[i]()
		_, err := g.Apply(context.Background(), ch)
		if errors.Is(err, apply.ErrUnlinked) {
			whole, ok := final[ch.ExternalID]
			if !ok {
				continue // deleted at the source since: the worker ignores the edit
			}
			ch.Partial, ch.Fields = false, whole
			_, err = g.Apply(context.Background(), ch)
		}
		if err != nil {
			t.Fatalf("apply %s %s at %s: %v", ch.Kind, ch.ExternalID, ch.OccurredAt, err)
		}
	}
	linked := map[string]bool{}
	var live []string
	for k, id := range m.state.links {
		f, ok := m.state.records[recKey{k.objectType, id}]
		if !ok {
			continue
		}
		linked[id] = true
		s := k.externalID
		if fields {
			s += fmt.Sprint(f)
		}
		live = append(live, s)
	}
	slices.Sort(live)
	unlinked := 0
	for k := range maps.Keys(m.state.records) {
		if !linked[k.id] {
			unlinked++
		}
	}
	return fmt.Sprintf("linked [%s], unlinked %d", strings.Join(live, " "), unlinked)
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// permutations returns every order of 0..n-1.
func permutations(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range permutations(n - 1) {
		for i := 0; i <= len(p); i++ {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}
