package sqlq

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/hubsync/hubsync/internal/jsonvalid"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/store"
)

// InboundRepo is the _System_IntegrationInbound queue.
type InboundRepo struct{ *Queue[store.InboundEvent] }

// OutboundRepo is the _System_IntegrationOutbound queue.
type OutboundRepo struct{ *Queue[store.OutboundEvent] }

// InternalRepo is the _System_OutboxEvent queue.
type InternalRepo struct{ *Queue[store.InternalEvent] }

var (
	_ store.InboundRepository  = (*InboundRepo)(nil)
	_ store.OutboundRepository = (*OutboundRepo)(nil)
	_ store.InternalRepository = (*InternalRepo)(nil)
)

// required reports the first empty field of an event about to be enqueued.
func required(what string, fields ...string) error {
	var missing []string
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i+1] == "" {
			missing = append(missing, fields[i])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("enqueue %s: %s must be set", what, strings.Join(missing, ", "))
	}
	return nil
}

// column is a text value of an event and the size of its column.
type column struct {
	name  string
	value string
	max   int // characters
}

// fits checks that each value fits its column as text every database stores
// whole: PostgreSQL refuses a longer value, invalid UTF-8 and NUL; MySQL's
// INSERT IGNORE (the inbound enqueue) would cut a longer value silently, so
// an ExternalID could name another object; SQLite would store it all.
func fits(what string, cols ...column) error {
	for _, c := range cols {
		switch {
		case textcheck.Problem(c.value) != "":
			return fmt.Errorf("enqueue %s: %s %q %s, which no database stores as text", what, c.name, c.value, textcheck.Problem(c.value))
		case utf8.RuneCountInString(c.value) > c.max:
			return fmt.Errorf("enqueue %s: %s has %d characters; at most %d fit", what, c.name, utf8.RuneCountInString(c.value), c.max)
		}
	}
	return nil
}

// identity fills the id and creation time an enqueue stamps.
func (s *Store) identity(id string, created time.Time) (string, time.Time, error) {
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return "", time.Time{}, err
		}
		id = u.String()
	}
	if created.IsZero() {
		created = s.now()
	}
	return id, created.UTC().Truncate(time.Microsecond), nil
}

func validJSON(what string, payload json.RawMessage, optional ...json.RawMessage) error {
	if len(payload) == 0 {
		return fmt.Errorf("enqueue %s: Payload must be set (a JSON document)", what)
	}
	for _, m := range append(optional, payload) {
		if len(m) > 0 && !jsonvalid.Valid(m) {
			return fmt.Errorf("enqueue %s: payload is not valid JSON", what)
		}
		// JSON text is UTF-8 (RFC 8259), which json.Valid does not check:
		// PostgreSQL refused other bytes with an encoding error, and
		// SQLite and MariaDB stored them.
		if !utf8.Valid(m) {
			return fmt.Errorf("enqueue %s: payload is not valid JSON: it is not UTF-8", what)
		}
	}
	return nil
}

func (r *InboundRepo) params(ev store.InboundEvent) (params, error) {
	if err := required("inbound", "Source", ev.Source, "ExternalID", ev.ExternalID, "ObjectType", ev.ObjectType,
		"EventType", ev.EventType, "IdempotencyKey", ev.IdempotencyKey); err != nil {
		return nil, err
	}
	if err := fits("inbound", column{"ID", ev.ID, 255}, column{"Source", ev.Source, 50}, column{"ExternalID", ev.ExternalID, 255},
		column{"ObjectType", ev.ObjectType, 100}, column{"EventType", ev.EventType, 20}, column{"IdempotencyKey", ev.IdempotencyKey, 255}); err != nil {
		return nil, err
	}
	if err := validJSON("inbound", ev.Payload, ev.RawPayload); err != nil {
		return nil, err
	}
	status, err := inboundStatus(ev.Status)
	if err != nil {
		return nil, err
	}
	id, created, err := r.s.identity(ev.ID, ev.CreatedDate)
	if err != nil {
		return nil, err
	}
	now := r.s.now()
	var processed *time.Time
	if status == store.StatusProcessed {
		processed = &now
	}
	return params{
		"id": id, "source": ev.Source, "external_id": ev.ExternalID, "object_type": ev.ObjectType,
		"event_type": ev.EventType, "payload": encodeJSON(ev.Payload), "raw_payload": encodeJSON(ev.RawPayload),
		"idempotency_key": ev.IdempotencyKey, "status": string(status), "processed": r.s.encodeTimePtr(processed),
		"created": r.s.encodeTime(created), "now": r.s.encodeTime(now),
		"record_key": ev.Source, "record_id": ev.ExternalID,
		"created_time": created, // unencoded, for batchColumns
	}, nil
}

// inboundStatus is the status an inbound event is stored with: pending, the
// zero value's, or processed, for an event that needs no handling but is kept
// for audit (the receiver's echoes of our own writes). Any other would put a
// row in a state no claim made: processing without a lease, or a dead letter
// without an error.
func inboundStatus(s store.Status) (store.Status, error) {
	switch s {
	case "", store.StatusPending:
		return store.StatusPending, nil
	case store.StatusProcessed:
		return store.StatusProcessed, nil
	}
	return "", fmt.Errorf("enqueue inbound: QueueState.Status %q cannot be enqueued; leave it empty (pending) or set store.StatusProcessed", s)
}

// EnqueueConn is Enqueue through c, a caller's transaction of any driver.
func (r *InboundRepo) EnqueueConn(ctx context.Context, c Conn, ev store.InboundEvent) (store.EnqueueResult, error) {
	p, err := r.params(ev)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	res, err := r.insert(ctx, c, p, ev.IdempotencyKey)
	if err != nil {
		return res, r.op("enqueue", err)
	}
	return res, nil
}

// Enqueue inserts an event; a duplicate IdempotencyKey reports Inserted false.
func (r *InboundRepo) Enqueue(ctx context.Context, ev store.InboundEvent) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := r.s.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
		res, err = r.EnqueueConn(ctx, SQLConn{tx}, ev)
		return err
	})
	return res, err
}

// EnqueueTx is Enqueue inside the caller's transaction.
func (r *InboundRepo) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.InboundEvent) (store.EnqueueResult, error) {
	return r.EnqueueConn(ctx, SQLConn{tx}, ev)
}

// EnqueueBatch inserts events in one transaction. It takes all their
// sequences with one statement (nextSeqBatch); where the dialect has an
// InsertBatch query (PostgreSQL: it returns each event's id) or an
// InsertBatchIgnore query (MySQL: the ids are read back when some event was
// skipped) the insert is one statement too, otherwise one statement per event.
func (r *InboundRepo) EnqueueBatch(ctx context.Context, evs []store.InboundEvent) ([]store.EnqueueResult, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	batch, multi := r.q["InsertBatch"]
	rows := make([]params, len(evs))
	for i, ev := range evs {
		p, err := r.params(ev)
		if err != nil {
			return nil, err
		}
		rows[i] = p
	}
	var out []store.EnqueueResult
	err := r.s.inTx(ctx, nil, func(tx *sql.Tx) error {
		if err := r.nextSeqBatch(ctx, tx, rows); err != nil {
			return r.op("enqueue batch", err)
		}
		if multi {
			var err error
			out, err = r.insertBatch(ctx, tx, batch, rows)
			return err
		}
		// An event that names its own ID could find that ID already under its
		// key, and read back as inserted: those go one statement each.
		if q, ok := r.q["InsertBatchIgnore"]; ok && !slices.ContainsFunc(evs, func(ev store.InboundEvent) bool { return ev.ID != "" }) {
			var err error
			out, err = r.insertBatchIgnore(ctx, tx, q, rows)
			return err
		}
		out = make([]store.EnqueueResult, 0, len(evs))
		for i, p := range rows {
			res, err := r.insertSeq(ctx, SQLConn{tx}, p, evs[i].IdempotencyKey)
			if err != nil {
				return r.op("enqueue", err)
			}
			out = append(out, res)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// insertBatch runs InsertBatch and resolves the ids it could not see: a key
// repeated within the batch, or inserted by a concurrent transaction.
func (r *InboundRepo) insertBatch(ctx context.Context, tx *sql.Tx, q query, rows []params) ([]store.EnqueueResult, error) {
	args, err := q.args(batchColumns(rows, r.s.encodeTime(r.s.now())))
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	res, err := tx.QueryContext(ctx, q.text, args...)
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	out := make([]store.EnqueueResult, len(rows))
	for res.Next() {
		var ord int
		var er store.EnqueueResult
		if err := res.Scan(&ord, &er.ID, &er.Inserted); err != nil {
			res.Close()
			return nil, r.op("enqueue batch", err)
		}
		if ord < 0 || ord >= len(out) {
			res.Close()
			return nil, r.op("enqueue batch", fmt.Errorf("result for event %d of %d", ord, len(out)))
		}
		out[ord] = er
	}
	res.Close()
	if err := res.Err(); err != nil {
		return nil, r.op("enqueue batch", err)
	}
	byKey := map[string]string{}
	lookup := r.q["IDByIdempotencyKey"]
	for i := range out {
		key := rows[i]["idempotency_key"].(string)
		if out[i].ID == "" {
			if id, ok := byKey[key]; ok {
				out[i].ID = id
			} else if err := tx.QueryRowContext(ctx, lookup.text, mustArgs(lookup, params{"idempotency_key": key})...).Scan(&out[i].ID); err != nil {
				return nil, r.op("enqueue batch", fmt.Errorf("look up duplicate idempotency key %q: %w", key, err))
			}
		}
		if _, ok := byKey[key]; !ok {
			byKey[key] = out[i].ID
		}
	}
	return out, nil
}

// insertBatchIgnore runs InsertBatchIgnore, then, unless it wrote every
// event, reads back the id each key holds (IDsByIdempotencyKeys): an event
// was inserted when its key holds its own id, which is new (the caller named
// no ID).
func (r *InboundRepo) insertBatchIgnore(ctx context.Context, tx *sql.Tx, q query, rows []params) ([]store.EnqueueResult, error) {
	events := make([]batchRow, len(rows))
	for i, p := range rows {
		events[i] = batchRowOf(i, p)
		if t, ok := events[i].Created.(time.Time); ok {
			events[i].Created = t.UTC().Format("2006-01-02 15:04:05.000000")
		}
	}
	doc, err := json.Marshal(events)
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	res, err := tx.ExecContext(ctx, q.text, mustArgs(q, params{"events": string(doc), "now": r.s.encodeTime(r.s.now())})...)
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	out := make([]store.EnqueueResult, len(rows))
	if n, err := res.RowsAffected(); err == nil && n == int64(len(rows)) {
		for i, ev := range events {
			out[i] = store.EnqueueResult{ID: ev.ID, Inserted: true}
		}
		return out, nil
	}
	keys := make([]string, len(events))
	for i, ev := range events {
		keys[i] = ev.IdempotencyKey
	}
	list, err := json.Marshal(keys)
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	lookup := r.q["IDsByIdempotencyKeys"]
	found, err := tx.QueryContext(ctx, lookup.text, mustArgs(lookup, params{"keys": string(list)})...)
	if err != nil {
		return nil, r.op("enqueue batch", err)
	}
	ids := make(map[string]string, len(keys))
	for found.Next() {
		var key, id string
		if err := found.Scan(&key, &id); err != nil {
			found.Close()
			return nil, r.op("enqueue batch", err)
		}
		ids[key] = id
	}
	found.Close()
	if err := found.Err(); err != nil {
		return nil, r.op("enqueue batch", err)
	}
	for i, ev := range events {
		id, ok := ids[ev.IdempotencyKey]
		if !ok {
			return nil, r.op("enqueue batch", fmt.Errorf("event %d (idempotency key %q) was neither inserted nor found", i, ev.IdempotencyKey))
		}
		out[i] = store.EnqueueResult{ID: id, Inserted: id == ev.ID}
	}
	return out, nil
}

// batchColumns are InsertBatch's parameters: one array per column, element
// i being rows[i] (as InboundRepo.params made it, with the seq nextSeqBatch
// took), and one @now for the whole statement, so there is neither a row's now
// nor its processed. The driver sends the arrays in its binary format (pgx:
// PostgreSQL's). A JSON document of the rows cost a fifth of the receiver's
// CPU to encode, escaping every payload, and the database parsed it whole
// before parsing each payload again.
func batchColumns(rows []params, now any) params {
	n := len(rows)
	ids, sources, externalIDs := make([]string, n), make([]string, n), make([]string, n)
	objectTypes, eventTypes, keys, statuses := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	payloads, rawPayloads := make([]*string, n), make([]*string, n)
	seqs, created := make([]int64, n), make([]time.Time, n)
	text := func(v any) *string {
		if v == nil {
			return nil // NULL
		}
		s := v.(string) // as encodeJSON binds a document
		return &s
	}
	for i, p := range rows {
		ids[i], sources[i], externalIDs[i] = p["id"].(string), p["source"].(string), p["external_id"].(string)
		objectTypes[i], eventTypes[i] = p["object_type"].(string), p["event_type"].(string)
		keys[i], statuses[i] = p["idempotency_key"].(string), p["status"].(string)
		payloads[i], rawPayloads[i] = text(p["payload"]), text(p["raw_payload"])
		seqs[i], created[i] = p["seq"].(int64), p["created_time"].(time.Time)
	}
	return params{
		"ids": ids, "sources": sources, "external_ids": externalIDs, "object_types": objectTypes,
		"event_types": eventTypes, "payloads": payloads, "raw_payloads": rawPayloads,
		"idempotency_keys": keys, "statuses": statuses, "seqs": seqs, "createds": created, "now": now,
	}
}

// batchRow is one event of InsertBatchIgnore's @events, typed: encoding the
// params maps themselves sorted every map's keys, and under load a fifth of
// the receiver's CPU went to encoding batches. InsertBatchIgnore takes one
// @now for the whole statement, so a row has neither now nor processed.
type batchRow struct {
	Ord            int    `json:"ord"`
	ID             string `json:"id"`
	Source         string `json:"source"`
	ExternalID     string `json:"external_id"`
	ObjectType     string `json:"object_type"`
	EventType      string `json:"event_type"`
	Payload        any    `json:"payload"`     // text, or nil for NULL
	RawPayload     any    `json:"raw_payload"` // text, or nil for NULL
	IdempotencyKey string `json:"idempotency_key"`
	Status         string `json:"status"`
	Seq            int64  `json:"seq"`
	Created        any    `json:"created"`
}

// batchRowOf is the batchRow of the event at ord, from its params (as
// InboundRepo.params made them, with the seq nextSeqBatch took).
func batchRowOf(ord int, p params) batchRow {
	return batchRow{
		Ord: ord, ID: p["id"].(string), Source: p["source"].(string), ExternalID: p["external_id"].(string),
		ObjectType: p["object_type"].(string), EventType: p["event_type"].(string),
		Payload: p["payload"], RawPayload: p["raw_payload"], IdempotencyKey: p["idempotency_key"].(string),
		Status: p["status"].(string), Seq: p["seq"].(int64), Created: p["created"],
	}
}

func (r *OutboundRepo) params(ev store.OutboundEvent) (params, error) {
	if err := required("outbound", "Destination", ev.Destination, "ObjectType", ev.ObjectType,
		"RecordID", ev.RecordID, "EventType", ev.EventType); err != nil {
		return nil, err
	}
	if err := fits("outbound", column{"ID", ev.ID, 255}, column{"Destination", ev.Destination, 50}, column{"ObjectType", ev.ObjectType, 100},
		column{"RecordID", ev.RecordID, 255}, column{"EventType", ev.EventType, 20}); err != nil {
		return nil, err
	}
	if err := validJSON("outbound", ev.Payload, ev.OldPayload); err != nil {
		return nil, err
	}
	id, created, err := r.s.identity(ev.ID, ev.CreatedDate)
	if err != nil {
		return nil, err
	}
	return params{
		"id": id, "destination": ev.Destination, "object_type": ev.ObjectType, "record_id": ev.RecordID,
		"event_type": ev.EventType, "payload": encodeJSON(ev.Payload), "old_payload": encodeJSON(ev.OldPayload),
		"created": r.s.encodeTime(created), "now": r.s.encodeTime(r.s.now()), "record_key": ev.Destination,
	}, nil
}

// EnqueueConn is EnqueueTx through c, a caller's transaction of any driver.
func (r *OutboundRepo) EnqueueConn(ctx context.Context, c Conn, ev store.OutboundEvent) (store.EnqueueResult, error) {
	p, err := r.params(ev)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	res, err := r.insert(ctx, c, p, "")
	if err != nil {
		return res, r.op("enqueue", err)
	}
	return res, nil
}

// Enqueue inserts an event in its own transaction.
func (r *OutboundRepo) Enqueue(ctx context.Context, ev store.OutboundEvent) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := r.s.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
		res, err = r.EnqueueConn(ctx, SQLConn{tx}, ev)
		return err
	})
	return res, err
}

// EnqueueTx inserts an event inside the caller's transaction.
func (r *OutboundRepo) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.OutboundEvent) (store.EnqueueResult, error) {
	return r.EnqueueConn(ctx, SQLConn{tx}, ev)
}

func (r *InternalRepo) params(ev store.InternalEvent) (params, error) {
	if err := required("internal", "EventType", ev.EventType, "ObjectType", ev.ObjectType, "RecordID", ev.RecordID); err != nil {
		return nil, err
	}
	if err := fits("internal", column{"ID", ev.ID, 255}, column{"EventType", ev.EventType, 50}, column{"ObjectType", ev.ObjectType, 100},
		column{"RecordID", ev.RecordID, 255}); err != nil {
		return nil, err
	}
	if err := validJSON("internal", ev.Payload, ev.Metadata); err != nil {
		return nil, err
	}
	id, created, err := r.s.identity(ev.ID, ev.CreatedDate)
	if err != nil {
		return nil, err
	}
	return params{
		"id": id, "event_type": ev.EventType, "object_type": ev.ObjectType, "record_id": ev.RecordID,
		"payload": encodeJSON(ev.Payload), "metadata": encodeJSON(ev.Metadata),
		"created": r.s.encodeTime(created), "now": r.s.encodeTime(r.s.now()), "record_key": "",
	}, nil
}

// EnqueueConn is EnqueueTx through c, a caller's transaction of any driver.
func (r *InternalRepo) EnqueueConn(ctx context.Context, c Conn, ev store.InternalEvent) (store.EnqueueResult, error) {
	p, err := r.params(ev)
	if err != nil {
		return store.EnqueueResult{}, err
	}
	res, err := r.insert(ctx, c, p, "")
	if err != nil {
		return res, r.op("enqueue", err)
	}
	return res, nil
}

// Enqueue inserts an event in its own transaction.
func (r *InternalRepo) Enqueue(ctx context.Context, ev store.InternalEvent) (store.EnqueueResult, error) {
	var res store.EnqueueResult
	err := r.s.inTx(ctx, nil, func(tx *sql.Tx) (err error) {
		res, err = r.EnqueueConn(ctx, SQLConn{tx}, ev)
		return err
	})
	return res, err
}

// EnqueueTx inserts an event inside the caller's transaction.
func (r *InternalRepo) EnqueueTx(ctx context.Context, tx store.DBTX, ev store.InternalEvent) (store.EnqueueResult, error) {
	return r.EnqueueConn(ctx, SQLConn{tx}, ev)
}
