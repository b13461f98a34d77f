package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/store"
)

func testEnqueueRoundTrip(t *testing.T, b *bundle) {
	q := b.q
	created := b.clock.Now()
	id := q.mustEnqueue(t, spec{Key: "hubspot", Object: "deals", Record: "r-42", Payload: json.RawMessage(`{"a":1}`)})
	got := q.mustGet(t, id)
	if got.ID != id {
		t.Errorf("Get(%s).ID = %q", id, got.ID)
	}
	wantKey := "hubspot"
	if !q.keyed {
		wantKey = ""
	}
	if got.Key != wantKey || got.Object != "deals" || got.Record != "r-42" {
		t.Errorf("Get(%s) = key %q object %q record %q, want %q deals r-42", id, got.Key, got.Object, got.Record, wantKey)
	}
	if got.Status != store.StatusPending || got.Attempt != 0 || got.RetryCount != 0 || got.ErrorMessage != "" {
		t.Errorf("new event = %v error %q, want pending, attempt 0, retry 0, no error", got, got.ErrorMessage)
	}
	if !got.CreatedDate.Equal(created) {
		t.Errorf("CreatedDate = %s, want the store clock's %s (Config.Now, not the database's clock)", got.CreatedDate, created)
	}
	if got.NextAttemptDate.After(created) {
		t.Errorf("NextAttemptDate = %s, after CreatedDate %s: a new event must be claimable at once", got.NextAttemptDate, created)
	}
	if got.LeaseExpiresDate != nil || got.ProcessedDate != nil {
		t.Errorf("new event has LeaseExpiresDate %v ProcessedDate %v, want both nil", got.LeaseExpiresDate, got.ProcessedDate)
	}
	// Another event gets another id.
	res, err := q.enqueue(context.Background(), spec{})
	if err != nil || res.ID == "" || res.ID == id {
		t.Errorf("second enqueue = %+v, %v; want a new id", res, err)
	}
}

func testIdempotentEnqueueConcurrent(t *testing.T, b *bundle) {
	const n = 50
	ctx := context.Background()
	ev := store.InboundEvent{
		Source: "hubspot", ExternalID: "101", ObjectType: "contacts", EventType: store.EventUpdate,
		Payload: json.RawMessage(`{"id":"101"}`), IdempotencyKey: "hubspot:evt-1",
	}
	results := make([]store.EnqueueResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			results[i], errs[i] = b.s.Inbound().Enqueue(ctx, ev)
		})
	}
	close(start)
	wg.Wait()
	inserted := 0
	var id string
	for i := range n {
		if errs[i] != nil {
			t.Errorf("enqueue #%d of the same IdempotencyKey: %v; a duplicate must be skipped, not an error", i, errs[i])
			continue
		}
		if results[i].Inserted {
			inserted++
			id = results[i].ID
		}
	}
	if inserted != 1 {
		t.Fatalf("%d of %d concurrent enqueues of one IdempotencyKey report Inserted, want exactly 1", inserted, n)
	}
	for i := range n {
		if errs[i] == nil && results[i].ID != id {
			t.Errorf("enqueue #%d returned id %q, want the stored event's id %q", i, results[i].ID, id)
		}
	}
	if c := b.q.countRows(t, ""); c != 1 {
		t.Errorf("%d rows after %d enqueues of one IdempotencyKey, want 1", c, n)
	}
	// A duplicate inside a caller's transaction is skipped too.
	tx, err := b.s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.s.Inbound().EnqueueTx(ctx, tx, ev)
	if cerr := tx.Commit(); cerr != nil {
		t.Fatalf("commit after duplicate EnqueueTx: %v", cerr)
	}
	if err != nil || res.Inserted || res.ID != id {
		t.Errorf("EnqueueTx of a duplicate = %+v, %v; want Inserted false, ID %q, no error", res, err, id)
	}
}

func testEnqueueBatch(t *testing.T, b *bundle) {
	ctx := context.Background()
	mk := func(key, ext string) store.InboundEvent {
		return store.InboundEvent{Source: "hubspot", ExternalID: ext, ObjectType: "contacts", EventType: store.EventCreate, Payload: json.RawMessage(`{}`), IdempotencyKey: key}
	}
	first, err := b.s.Inbound().Enqueue(ctx, mk("k1", "1"))
	if err != nil || !first.Inserted {
		t.Fatalf("enqueue k1 = %+v, %v", first, err)
	}
	res, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{mk("k2", "2"), mk("k1", "1"), mk("k3", "3")})
	if err != nil {
		t.Fatalf("EnqueueBatch with one existing key: %v", err)
	}
	if len(res) != 3 {
		t.Fatalf("EnqueueBatch of 3 returned %d results", len(res))
	}
	if !res[0].Inserted || res[1].Inserted || !res[2].Inserted {
		t.Errorf("EnqueueBatch Inserted = %v %v %v, want true false true (k1 already existed)", res[0].Inserted, res[1].Inserted, res[2].Inserted)
	}
	if res[1].ID != first.ID {
		t.Errorf("EnqueueBatch duplicate k1 has id %q, want the existing %q", res[1].ID, first.ID)
	}
	if c := b.q.countRows(t, ""); c != 3 {
		t.Errorf("%d rows, want 3", c)
	}
	// A key repeated within one batch is inserted once.
	res, err = b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{mk("k4", "4"), mk("k4", "4"), mk("k2", "2")})
	if err != nil {
		t.Fatalf("EnqueueBatch with a key repeated in the batch: %v", err)
	}
	if len(res) != 3 || !res[0].Inserted || res[1].Inserted || res[1].ID != res[0].ID || res[2].Inserted || res[2].ID == "" {
		t.Errorf("EnqueueBatch(k4, k4, k2) = %+v, want k4 inserted once (the second reporting its id) and k2 existing", res)
	}
	if c := b.q.countRows(t, ""); c != 4 {
		t.Errorf("%d rows, want 4", c)
	}
	// A batch stores what single enqueues store: RawPayload byte for byte
	// (where the store keeps JSON text) and a nil one as nil.
	raw := json.RawMessage(`{ "eventId" : 7, "b":[1,2] ,"s":"\u00e9 \"q\""}`)
	withRaw := mk("k5", "5")
	withRaw.RawPayload = raw
	res, err = b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{withRaw, mk("k6", "6")})
	if err != nil || len(res) != 2 || !res[0].Inserted || !res[1].Inserted {
		t.Fatalf("EnqueueBatch(k5, k6) = %+v, %v; want both inserted", res, err)
	}
	e, err := b.s.Inbound().Get(ctx, res[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	checkRawPayload(t, b.s, "batch RawPayload", e.RawPayload, raw)
	if e.IdempotencyKey != "k5" || e.ExternalID != "5" || e.Status != store.StatusPending {
		t.Errorf("batch event = key %q external id %q status %q, want k5, 5, pending", e.IdempotencyKey, e.ExternalID, e.Status)
	}
	if e2, err := b.s.Inbound().Get(ctx, res[1].ID); err != nil || e2.RawPayload != nil {
		t.Errorf("batch RawPayload enqueued nil reads back as %q, %v; want nil", e2.RawPayload, err)
	}
	// A CreatedDate the caller sets, in any zone, is stored as that instant
	// to the microsecond, as a single enqueue stores it; the store's clock
	// stamps the other.
	created := time.Date(2001, 2, 3, 4, 5, 6, 123456789, time.FixedZone("IST", 5*3600+1800))
	dated := mk("k9", "9")
	dated.CreatedDate = created
	res, err = b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{mk("k10", "10"), dated})
	if err != nil || len(res) != 2 || !res[0].Inserted || !res[1].Inserted {
		t.Fatalf("EnqueueBatch(k10, k9 with a CreatedDate) = %+v, %v; want both inserted", res, err)
	}
	for i, want := range []time.Time{b.s.Now(), created} {
		e, err := b.s.Inbound().Get(ctx, res[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if want = want.Truncate(time.Microsecond); !e.CreatedDate.Equal(want) {
			t.Errorf("batch event %d CreatedDate = %s, want %s", i, e.CreatedDate, want.UTC())
		}
	}
	// A batch with one event whose Payload or RawPayload is not JSON is
	// refused whole, with an error that says so, and stores nothing.
	before := b.q.countRows(t, "")
	for _, bad := range []struct {
		name string
		edit func(*store.InboundEvent)
	}{
		{"a Payload that is not JSON", func(e *store.InboundEvent) { e.Payload = json.RawMessage(`{"a":`) }},
		{"a RawPayload that is not JSON", func(e *store.InboundEvent) { e.RawPayload = json.RawMessage(`{'eventId':1}`) }},
		// JSON is UTF-8 (RFC 8259); json.Valid alone accepts this.
		{"a RawPayload that is not UTF-8", func(e *store.InboundEvent) { e.RawPayload = json.RawMessage("{\"a\":\"\xff\"}") }},
	} {
		ev := mk("k8", "8")
		bad.edit(&ev)
		_, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{mk("k7", "7"), ev})
		if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("EnqueueBatch with %s: error %v, want one that says it is not valid JSON", bad.name, err)
		}
		if _, err := b.s.Inbound().Enqueue(ctx, ev); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("Enqueue with %s: error %v, want one that says it is not valid JSON", bad.name, err)
		}
	}
	// So is one with a value its column cannot hold: MariaDB's INSERT IGNORE
	// cut it silently (an ExternalID then named another object), PostgreSQL
	// refused it with its own error, SQLite stored it.
	for _, bad := range []struct {
		name, want string
		edit       func(*store.InboundEvent)
	}{
		{"an ExternalID of 256 characters", "ExternalID has 256 characters; at most 255", func(e *store.InboundEvent) { e.ExternalID = strings.Repeat("9", 256) }},
		{"an ObjectType of 101 characters", "ObjectType has 101 characters; at most 100", func(e *store.InboundEvent) { e.ObjectType = strings.Repeat("o", 101) }},
		{"a Source with NUL", "Source", func(e *store.InboundEvent) { e.Source = "hub\x00spot" }},
		{"an IdempotencyKey that is not UTF-8", "IdempotencyKey", func(e *store.InboundEvent) { e.IdempotencyKey = "k\xff" }},
	} {
		ev := mk("k8", "8")
		bad.edit(&ev)
		if _, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{mk("k7", "7"), ev}); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("EnqueueBatch with %s: error %v, want one naming %q", bad.name, err, bad.want)
		}
		if _, err := b.s.Inbound().Enqueue(ctx, ev); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Enqueue with %s: error %v, want one naming %q", bad.name, err, bad.want)
		}
	}
	// The longest values that fit are stored whole (in characters, not bytes).
	long := mk("k11", strings.Repeat("é", 255))
	long.ObjectType = strings.Repeat("ö", 100)
	if res, err := b.s.Inbound().EnqueueBatch(ctx, []store.InboundEvent{long}); err != nil {
		t.Errorf("EnqueueBatch of values as long as their columns: %v", err)
	} else if e, err := b.s.Inbound().Get(ctx, res[0].ID); err != nil || e.ExternalID != long.ExternalID || e.ObjectType != long.ObjectType {
		t.Errorf("stored ExternalID %d and ObjectType %d characters, %v; want 255 and 100", len([]rune(e.ExternalID)), len([]rune(e.ObjectType)), err)
	}
	if c := b.q.countRows(t, ""); c != before+1 {
		t.Errorf("%d rows after batches refused for their JSON or their values, want %d", c, before+1)
	}
}

// jsonEqual compares JSON semantically: PostgreSQL's JSONB and MySQL's JSON
// normalise whitespace and key order.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// preservesJSONText reports whether the backend's untyped-JSON columns keep the
// text as written: SQLite (TEXT), PostgreSQL (json, not jsonb), MariaDB (JSON is
// LONGTEXT). Oracle MySQL's JSON type normalises.
func preservesJSONText(t *testing.T, s store.Store) bool {
	switch s.Dialect() {
	case store.SQLite, store.Postgres:
		return true
	case store.MySQL:
		var v string
		if err := s.DB().QueryRow("SELECT VERSION()").Scan(&v); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(strings.ToLower(v), "mariadb")
	}
	return false
}

func testPayloads(t *testing.T, b *bundle) {
	ctx := context.Background()
	payload := json.RawMessage(`{"name": "Zoë 名字", "nested": {"b": [1, 2.5, null, true], "a": "x\"y\\z"}, "emoji": "🙂"}`)
	raw := json.RawMessage(`[ {"eventId": 1,   "propertyValue": "a  b"} ]`)
	old := json.RawMessage(`{"name":"before"}`)
	var id, idNull string
	checkNull := func(col, id string, wantNull bool) {
		t.Helper()
		var n int
		query := dialectsql.Rebind(b.s.Dialect(), "SELECT COUNT(*) FROM "+b.q.table+" WHERE Id = ? AND "+col+" IS NULL")
		if err := b.s.DB().QueryRow(query, id).Scan(&n); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if (n == 1) != wantNull {
			t.Errorf("%s of %s IS NULL = %v, want %v (a nil json.RawMessage stores SQL NULL, not JSON null)", col, id, n == 1, wantNull)
		}
	}
	switch b.q.dir {
	case store.DirectionInbound:
		r1, err := b.s.Inbound().Enqueue(ctx, store.InboundEvent{Source: "hubspot", ExternalID: "1", ObjectType: "contacts", EventType: store.EventUpdate, Payload: payload, RawPayload: raw, IdempotencyKey: "p1"})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.s.Inbound().Enqueue(ctx, store.InboundEvent{Source: "hubspot", ExternalID: "2", ObjectType: "contacts", EventType: store.EventUpdate, Payload: payload, IdempotencyKey: "p2"})
		if err != nil {
			t.Fatal(err)
		}
		id, idNull = r1.ID, r2.ID
		e, err := b.s.Inbound().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		checkRawPayload(t, b.s, "RawPayload", e.RawPayload, raw)
		if e.IdempotencyKey != "p1" || e.EventType != store.EventUpdate || e.ObjectType != "contacts" {
			t.Errorf("Get = key %q type %q object %q", e.IdempotencyKey, e.EventType, e.ObjectType)
		}
		e2, err := b.s.Inbound().Get(ctx, idNull)
		if err != nil {
			t.Fatal(err)
		}
		if e2.RawPayload != nil {
			t.Errorf("RawPayload enqueued nil reads back as %q, want nil", e2.RawPayload)
		}
		checkNull("RawPayload", idNull, true)
		checkNull("RawPayload", id, false)
	case store.DirectionOutbound:
		r1, err := b.s.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "1", EventType: store.EventUpdate, Payload: payload, OldPayload: old})
		if err != nil {
			t.Fatal(err)
		}
		r2, err := b.s.Outbound().Enqueue(ctx, store.OutboundEvent{Destination: "hubspot", ObjectType: "contacts", RecordID: "2", EventType: store.EventCreate, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		id, idNull = r1.ID, r2.ID
		e, err := b.s.Outbound().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(e.OldPayload, old) {
			t.Errorf("OldPayload = %s, want %s", e.OldPayload, old)
		}
		e2, err := b.s.Outbound().Get(ctx, idNull)
		if err != nil {
			t.Fatal(err)
		}
		if e2.OldPayload != nil {
			t.Errorf("OldPayload enqueued nil reads back as %q, want nil", e2.OldPayload)
		}
		checkNull("OldPayload", idNull, true)
		checkNull("OldPayload", id, false)
	case store.DirectionInternal:
		meta := json.RawMessage(`{"sync_source":"hubspot"}`)
		tx, err := b.s.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		r1, err1 := b.s.Internal().EnqueueTx(ctx, tx, store.InternalEvent{EventType: store.EventRecordUpdated, ObjectType: "contacts", RecordID: "1", Payload: payload, Metadata: meta})
		r2, err2 := b.s.Internal().EnqueueTx(ctx, tx, store.InternalEvent{EventType: store.EventRecordCreated, ObjectType: "contacts", RecordID: "2", Payload: payload})
		if err := errors.Join(err1, err2, tx.Commit()); err != nil {
			t.Fatal(err)
		}
		id, idNull = r1.ID, r2.ID
		e, err := b.s.Internal().Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(e.Metadata, meta) || e.EventType != store.EventRecordUpdated {
			t.Errorf("Metadata = %s type %q, want %s %q", e.Metadata, e.EventType, meta, store.EventRecordUpdated)
		}
		e2, err := b.s.Internal().Get(ctx, idNull)
		if err != nil {
			t.Fatal(err)
		}
		if e2.Metadata != nil {
			t.Errorf("Metadata enqueued nil reads back as %q, want nil", e2.Metadata)
		}
		checkNull("Metadata", idNull, true)
		checkNull("Metadata", id, false)
	}
	got := b.q.mustGet(t, id)
	if !jsonEqual(got.Payload, payload) {
		t.Errorf("Payload = %s, want JSON equal to %s", got.Payload, payload)
	}
	// Claims hand out the payload too.
	claimed := b.q.mustClaim(t, 10, minute, "w1")
	if len(claimed) != 2 {
		t.Fatalf("claimed %v, want both events", claimed)
	}
	for _, c := range claimed {
		if !jsonEqual(c.Payload, payload) {
			t.Errorf("claimed %s has Payload %s, want %s", c.ID, c.Payload, payload)
		}
	}
}

func testTxRollback(t *testing.T, b *bundle) {
	ctx := context.Background()
	tx, err := b.s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.q.enqueueTx(ctx, tx, spec{})
	if err != nil {
		tx.Rollback()
		t.Fatalf("EnqueueTx: %v", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.q.get(ctx, res.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get of an event enqueued in a rolled-back transaction: err = %v, want ErrNotFound", err)
	}
	if c := b.q.countRows(t, ""); c != 0 {
		t.Errorf("%d rows after a rolled-back EnqueueTx, want 0", c)
	}
	if got := b.q.mustClaim(t, 10, minute, "w1"); len(got) != 0 {
		t.Errorf("claimed %v after a rolled-back EnqueueTx, want nothing", got)
	}

	tx, err = b.s.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err = b.q.enqueueTx(ctx, tx, spec{})
	if err != nil {
		tx.Rollback()
		t.Fatalf("EnqueueTx: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := b.q.mustGet(t, res.ID); got.Status != store.StatusPending {
		t.Errorf("committed EnqueueTx event = %v, want pending", got)
	}
	if got := b.q.mustClaim(t, 10, minute, "w1"); len(got) != 1 || got[0].ID != res.ID {
		t.Errorf("claimed %v after a committed EnqueueTx, want [%s]", got, res.ID)
	}
}

func testGetNotFound(t *testing.T, b *bundle) {
	b.q.mustEnqueue(t, spec{})
	if _, err := b.q.get(context.Background(), "no-such-id"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(no-such-id): err = %v, want ErrNotFound", err)
	}
}

// testEnqueueProcessed checks an inbound event enqueued already processed
// (QueueState.Status, as the webhook receiver stores the echoes of our own
// writes): it is stored processed at the store's clock, takes its record's
// next Seq, is never claimed nor blocks or reorders the record's other events,
// counts as processed in Stats, and its key still makes a duplicate a no-op,
// alone and in a batch. Any status but pending and processed is refused.
func testEnqueueProcessed(t *testing.T, b *bundle) {
	ctx := context.Background()
	in := b.s.Inbound()
	ev := func(key, record string, status store.Status) store.InboundEvent {
		return store.InboundEvent{Source: keyDefault, ExternalID: record, ObjectType: "contacts", EventType: store.EventUpdate,
			Payload: json.RawMessage(`{}`), IdempotencyKey: key, QueueState: store.QueueState{Status: status}}
	}
	mustEnqueue := func(e store.InboundEvent) string {
		t.Helper()
		res, err := in.Enqueue(ctx, e)
		if err != nil || !res.Inserted {
			t.Fatalf("Enqueue %s (%q) = %+v, %v; want inserted", e.IdempotencyKey, e.Status, res, err)
		}
		b.clock.Advance(time.Millisecond)
		return res.ID
	}
	// Record R: pending, processed, then a batch of pending, processed, pending.
	first := mustEnqueue(ev("r-1", "R", ""))
	doneAt := b.clock.Now()
	done := mustEnqueue(ev("r-2", "R", store.StatusProcessed))
	batch, err := in.EnqueueBatch(ctx, []store.InboundEvent{ev("r-3", "R", store.StatusPending), ev("r-4", "R", store.StatusProcessed), ev("r-5", "R", "")})
	if err != nil || len(batch) != 3 || !batch[0].Inserted || !batch[1].Inserted || !batch[2].Inserted {
		t.Fatalf("EnqueueBatch(pending, processed, pending) = %+v, %v; want all three inserted", batch, err)
	}
	batchAt := b.clock.Now()
	b.clock.Advance(time.Millisecond)
	// Record S has only a processed event.
	only := mustEnqueue(ev("s-1", "S", store.StatusProcessed))

	for _, c := range []struct {
		id string
		at time.Time
	}{{done, doneAt}, {batch[1].ID, batchAt}, {only, b.clock.Now().Add(-time.Millisecond)}} {
		got := b.q.mustGet(t, c.id)
		if got.Status != store.StatusProcessed || got.ProcessedDate == nil || !got.ProcessedDate.Equal(c.at) || got.Attempt != 0 || got.LeaseOwner != "" {
			t.Errorf("event enqueued processed = %v processed at %v owner %q; want processed at the store clock's %s, never claimed",
				got, got.ProcessedDate, got.LeaseOwner, c.at)
		}
	}
	// Seq counts every event of the record, processed or not, in enqueue order.
	var seqs []int64
	for _, id := range []string{first, done, batch[0].ID, batch[1].ID, batch[2].ID} {
		seqs = append(seqs, b.q.mustGet(t, id).Seq)
	}
	for i := 1; i < len(seqs); i++ {
		if seqs[i] != seqs[i-1]+1 {
			t.Fatalf("record R's Seqs = %v, want consecutive in enqueue order: an event enqueued processed takes its Seq too", seqs)
		}
	}

	st, err := b.s.Stats(ctx)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	counts := map[store.Status]int64{}
	for _, r := range st.Rows {
		if r.Direction == store.DirectionInbound && r.Key == keyDefault {
			counts[r.Status] += r.Count
		}
	}
	if counts[store.StatusProcessed] != 3 || counts[store.StatusPending] != 3 || len(counts) != 2 {
		t.Errorf("Stats of inbound %q = %v, want 3 processed and 3 pending", keyDefault, counts)
	}

	// One claim takes record R's three pending events, in order, and nothing else.
	c := b.q.mustClaim(t, 10, minute, "w1")
	if want := []string{first, batch[0].ID, batch[2].ID}; !slices.Equal(ids(c), want) {
		t.Fatalf("claim = %v; want record R's pending events %v in order, none of the processed ones", c, want)
	}
	if err := b.q.Complete(ctx, leases(c)...); err != nil {
		t.Fatal(err)
	}
	b.clock.Advance(time.Hour)
	if c := b.q.mustClaim(t, 10, minute, "w1"); len(c) != 0 {
		t.Fatalf("claim after the pending events were done = %v, want nothing", c)
	}
	if c, err := b.q.claimIDs(ctx, []string{done, only}, store.ClaimParams{Limit: 2, LeaseDuration: minute, Owner: "w1"}); err != nil || len(c) != 0 {
		t.Fatalf("ClaimIDs of events enqueued processed = %v, %v; want nothing", c, err)
	}

	// A duplicate of an event stored processed is skipped, and one stored
	// processed of a pending event's key changes nothing.
	pending := mustEnqueue(ev("t-1", "T", ""))
	for _, d := range []struct {
		e  store.InboundEvent
		id string
	}{{ev("r-2", "R", ""), done}, {ev("s-1", "S", store.StatusProcessed), only}, {ev("t-1", "T", store.StatusProcessed), pending}} {
		res, err := in.Enqueue(ctx, d.e)
		if err != nil || res.Inserted || res.ID != d.id {
			t.Errorf("Enqueue of duplicate %s (%q) = %+v, %v; want Inserted false, ID %s", d.e.IdempotencyKey, d.e.Status, res, err, d.id)
		}
		res2, err := in.EnqueueBatch(ctx, []store.InboundEvent{d.e})
		if err != nil || len(res2) != 1 || res2[0].Inserted || res2[0].ID != d.id {
			t.Errorf("EnqueueBatch of duplicate %s (%q) = %+v, %v; want Inserted false, ID %s", d.e.IdempotencyKey, d.e.Status, res2, err, d.id)
		}
	}
	if got := b.q.mustGet(t, pending); got.Status != store.StatusPending || got.ProcessedDate != nil {
		t.Errorf("pending event after a processed duplicate of its key = %v, want still pending", got)
	}
	if got := b.q.mustGet(t, done); got.Status != store.StatusProcessed {
		t.Errorf("processed event after a pending duplicate of its key = %v, want still processed", got)
	}

	// No other status can be enqueued.
	before := b.q.countRows(t, "")
	for _, s := range []store.Status{store.StatusProcessing, store.StatusFailed, "done"} {
		if _, err := in.Enqueue(ctx, ev("bad-"+string(s), "U", s)); err == nil || !strings.Contains(err.Error(), "Status") {
			t.Errorf("Enqueue with Status %q: err %v, want an error naming Status", s, err)
		}
		if _, err := in.EnqueueBatch(ctx, []store.InboundEvent{ev("bad2-"+string(s), "U", s)}); err == nil {
			t.Errorf("EnqueueBatch with Status %q: no error", s)
		}
	}
	if n := b.q.countRows(t, ""); n != before {
		t.Errorf("%d rows after refused enqueues, want %d", n, before)
	}
}

// checkRawPayload reports got unless it is want byte for byte (it is the
// audit copy of what arrived), or JSON equal to it on a store that does not
// keep JSON text.
func checkRawPayload(t *testing.T, s store.Store, what string, got, want json.RawMessage) {
	t.Helper()
	if preservesJSONText(t, s) {
		if !bytes.Equal(got, want) {
			t.Errorf("%s = %s, want byte-for-byte %s (it is the audit copy of what arrived)", what, got, want)
		}
	} else if !jsonEqual(got, want) {
		t.Errorf("%s = %s, want JSON equal to %s", what, got, want)
	}
}
