package inbound

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/store"
)

// knownApplier is a memApplier that knows some external ids
// (apply.UnknownIDs), by object type and id.
type knownApplier struct {
	*memApplier
	known map[string]bool
	mu    sync.Mutex
	asked [][]string
}

func (a *knownApplier) UnknownIDs(_ context.Context, _, objectType string, ids []string) ([]string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, slices.Clone(ids))
	var out []string
	for _, id := range ids {
		if !a.known[objectType+"/"+id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// archivedReader is a fakeReader that reads deleted objects too.
type archivedReader struct {
	*fakeReader
	archived map[string]hubspot.Object
	err      error
	reads    [][]string
	props    []string
}

func (r *archivedReader) BatchReadArchived(_ context.Context, _ hubspot.ObjectType, ids []string, properties []string) (*hubspot.BatchResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads = append(r.reads, slices.Clone(ids))
	r.props = properties
	if r.err != nil {
		return nil, r.err
	}
	res := &hubspot.BatchResult{Status: "COMPLETE"}
	for _, id := range ids {
		if o, ok := r.archived[id]; ok {
			o.Archived = true
			res.Results = append(res.Results, o)
		}
	}
	return res, nil
}

// TestWorkerReadsDeletedUnknownObjects: a deletion of an id the Applier knows
// nothing of reads the deleted object's id property (one call for the
// cycle's unknown ids, under a budget token) and carries it as the match
// value, by which the Applier finds a record whose create's answer was
// lost; a deletion of a known id, and one whose object is not found
// archived, read nothing more and match nothing.
func TestWorkerReadsDeletedUnknownObjects(t *testing.T) {
	t.Parallel()
	b := setup(t)
	app := &knownApplier{memApplier: b.applier, known: map[string]bool{"contacts/2": true}}
	reader := &archivedReader{fakeReader: &fakeReader{}, archived: map[string]hubspot.Object{
		"1": contactObj("1", "ada@example.com", "Ada", time.UnixMilli(t0)),
	}}
	bud := &fakeBudget{left: 10}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Applier, c.Budget = app, bud })
	b.deliverEvents(t, whEvent("contact.deletion", 1, t0+10), whEvent("contact.deletion", 2, t0+20), whEvent("contact.deletion", 3, t0+30))
	drain(t, w)
	if got := b.statusCounts(t); got["processed"] != 3 {
		t.Fatalf("statuses %v, want 3 processed", got)
	}
	if len(reader.reads) != 1 || !slices.Equal(reader.reads[0], []string{"1", "3"}) || !slices.Equal(reader.props, []string{"email"}) || bud.reserved != 1 {
		t.Fatalf("archived reads %v of %v under %d tokens; want one read of the unknown ids 1 and 3, of email, under one token", reader.reads, reader.props, bud.reserved)
	}
	byExt := map[string]apply.Change{}
	b.applier.mu.Lock()
	for _, ch := range b.applier.calls {
		byExt[ch.ExternalID] = ch
	}
	b.applier.mu.Unlock()
	if ch := byExt["1"]; ch.MatchField != "email" || ch.MatchValue != "ada@example.com" {
		t.Errorf("deletion of unknown 1 matches %q = %q; want email = ada@example.com", ch.MatchField, ch.MatchValue)
	}
	for _, id := range []string{"2", "3"} {
		if ch, ok := byExt[id]; !ok || ch.MatchValue != "" {
			t.Errorf("deletion of %s = %+v, %v; want it applied with no match value", id, ch, ok)
		}
	}
}

// TestWorkerRetriesDeletionsWhoseReadFailed: when the deleted object cannot
// be read, the deletion is retried rather than applied without its match
// value (which would leave the record its object was made from).
func TestWorkerRetriesDeletionsWhoseReadFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	app := &knownApplier{memApplier: b.applier, known: map[string]bool{}}
	reader := &archivedReader{fakeReader: &fakeReader{}, err: &hubspot.Error{StatusCode: 502, Kind: hubspot.KindRetryable, Message: "bad gateway"}}
	w := b.newWorker(t, reader, "w1", func(c *WorkerConfig) { c.Applier = app })
	b.deliverEvents(t, whEvent("contact.deletion", 1, t0+10))
	if _, err := w.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ev := range b.all(t) {
		if ev.Status != store.StatusPending || ev.RetryCount != 1 {
			t.Errorf("event %s: status %s, retries %d; want pending, retried once", ev.ID, ev.Status, ev.RetryCount)
		}
	}
	b.applier.mu.Lock()
	defer b.applier.mu.Unlock()
	if len(b.applier.calls) != 0 {
		t.Errorf("applied %+v; want nothing before the read succeeds", b.applier.calls)
	}
}
