package apply_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/outbox"
)

// memStore is an in-memory apply.RecordStore: what an application with its own
// tables implements, kept as small as the interface allows. A transaction works
// on a copy of the state, which replaces the state when it commits.
type memStore struct {
	state memState
	// sources records the sync source each transaction ran under.
	sources []string
	// failOn makes the named RecordTx method fail, to test atomicity.
	failOn string
}

type memState struct {
	seq        int
	links      map[extKey]string // -> local record id
	records    map[recKey]map[string]any
	clocks     map[recKey]map[string]time.Time
	tombstones map[extKey]apply.Tombstone
	// written are the records with an unfinished write to a source that was
	// handed to a worker (apply.UnrecordedWrites), set by tests.
	written map[recKey]bool
}

// extKey names an object on a source; recKey a local record.
type extKey struct{ source, objectType, externalID string }
type recKey struct{ objectType, id string }

func newMemStore() *memStore {
	return &memStore{state: memState{
		links: map[extKey]string{}, records: map[recKey]map[string]any{},
		clocks: map[recKey]map[string]time.Time{}, tombstones: map[extKey]apply.Tombstone{},
	}}
}

func (s memState) clone() memState {
	c := memState{seq: s.seq, links: maps.Clone(s.links), tombstones: maps.Clone(s.tombstones), written: maps.Clone(s.written),
		records: map[recKey]map[string]any{}, clocks: map[recKey]map[string]time.Time{}}
	for k, v := range s.records {
		c.records[k] = maps.Clone(v)
	}
	for k, v := range s.clocks {
		c.clocks[k] = maps.Clone(v)
	}
	return c
}

var errInjected = errors.New("injected failure")

func (m *memStore) InTx(ctx context.Context, fn func(apply.RecordTx) error) error {
	m.sources = append(m.sources, outbox.SyncSource(ctx))
	tx := &memTx{st: m.state.clone(), failOn: m.failOn}
	if err := fn(tx); err != nil {
		return err
	}
	m.state = tx.st
	return nil
}

// record returns the fields of the record linked to an external id, nil when
// it has none or it is deleted.
func (m *memStore) record(source, objectType, externalID string) (id string, fields map[string]any) {
	id = m.state.links[extKey{source, objectType, externalID}]
	return id, m.state.records[recKey{objectType, id}]
}

type memTx struct {
	st     memState
	failOn string
}

var _ apply.RecordTx = (*memTx)(nil)

func (t *memTx) fail(method string) error {
	if t.failOn == method {
		return fmt.Errorf("%s: %w", method, errInjected)
	}
	return nil
}

func (t *memTx) MayHaveWritten(_ context.Context, _, objectType, id string) (bool, error) {
	return t.st.written[recKey{objectType, id}], t.fail("MayHaveWritten")
}

func (t *memTx) LookupRecord(_ context.Context, source, objectType, externalID string) (string, bool, error) {
	id, ok := t.st.links[extKey{source, objectType, externalID}]
	return id, ok, t.fail("LookupRecord")
}

func (t *memTx) MatchRecord(_ context.Context, source, objectType, field, value string) (string, bool, error) {
	linked := map[string]bool{}
	for k, id := range t.st.links {
		if k.source == source && k.objectType == objectType {
			linked[id] = true
		}
	}
	for k, f := range t.st.records {
		if k.objectType == objectType && !linked[k.id] && fmt.Sprint(f[field]) == value {
			return k.id, true, nil
		}
	}
	return "", false, nil
}

func (t *memTx) Link(_ context.Context, source, objectType, id, externalID string) error {
	t.st.links[extKey{source, objectType, externalID}] = id
	return t.fail("Link")
}

func (t *memTx) UnlinkExternal(_ context.Context, source, objectType, externalID string) error {
	delete(t.st.links, extKey{source, objectType, externalID})
	return t.fail("UnlinkExternal")
}

func (t *memTx) NewRecordID() string {
	t.st.seq++
	return fmt.Sprintf("r%d", t.st.seq)
}

func (t *memTx) Tombstone(_ context.Context, source, objectType, externalID string) (apply.Tombstone, bool, error) {
	tomb, ok := t.st.tombstones[extKey{source, objectType, externalID}]
	return tomb, ok, t.fail("Tombstone")
}

func (t *memTx) PutTombstone(_ context.Context, source, objectType, externalID string, tomb apply.Tombstone) error {
	k := extKey{source, objectType, externalID}
	if old, ok := t.st.tombstones[k]; !ok || tomb.OccurredAt.After(old.OccurredAt) {
		t.st.tombstones[k] = tomb
	}
	return t.fail("PutTombstone")
}

func (t *memTx) RemoveTombstone(_ context.Context, source, objectType, externalID string, before time.Time) error {
	k := extKey{source, objectType, externalID}
	if old, ok := t.st.tombstones[k]; ok && old.OccurredAt.Before(before) {
		delete(t.st.tombstones, k)
	}
	return t.fail("RemoveTombstone")
}

func (t *memTx) LockRecord(_ context.Context, objectType, id string) (bool, error) {
	_, ok := t.st.records[recKey{objectType, id}]
	return ok, t.fail("LockRecord")
}

func (t *memTx) Clocks(_ context.Context, objectType, id string) (map[string]time.Time, error) {
	return maps.Clone(t.st.clocks[recKey{objectType, id}]), t.fail("Clocks")
}

func (t *memTx) AdvanceClocks(_ context.Context, objectType, id string, names []string, at time.Time) error {
	k := recKey{objectType, id}
	if t.st.clocks[k] == nil {
		t.st.clocks[k] = map[string]time.Time{}
	}
	for _, n := range names {
		if at.After(t.st.clocks[k][n]) {
			t.st.clocks[k][n] = at
		}
	}
	return t.fail("AdvanceClocks")
}

func (t *memTx) ClearFieldClocks(_ context.Context, objectType, id string) error {
	k := recKey{objectType, id}
	for n := range t.st.clocks[k] {
		if n != apply.DeletedClock {
			delete(t.st.clocks[k], n)
		}
	}
	return t.fail("ClearFieldClocks")
}

func (t *memTx) CreateRecord(_ context.Context, objectType, id string, fields map[string]any) error {
	f := map[string]any{}
	for k, v := range fields {
		if v != nil {
			f[k] = v
		}
	}
	t.st.records[recKey{objectType, id}] = f
	return t.fail("CreateRecord")
}

func (t *memTx) UpdateRecord(_ context.Context, objectType, id string, patch map[string]any) error {
	f, ok := t.st.records[recKey{objectType, id}]
	if !ok {
		return fmt.Errorf("update of missing record %s/%s", objectType, id)
	}
	for k, v := range patch {
		if v == nil {
			delete(f, k)
		} else {
			f[k] = v
		}
	}
	return t.fail("UpdateRecord")
}

func (t *memTx) DeleteRecord(_ context.Context, objectType, id string, _ bool) error {
	if _, ok := t.st.records[recKey{objectType, id}]; !ok {
		return fmt.Errorf("delete of missing record %s/%s", objectType, id)
	}
	delete(t.st.records, recKey{objectType, id})
	return t.fail("DeleteRecord")
}
