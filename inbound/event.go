package inbound

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/internal/jsonvalid"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/store"
)

// EventVersion is the version of the canonical Event JSON stored as Payload. It
// changes whenever a field changes meaning.
const EventVersion = 1

// EventOther is the EventType of a subscription type this package does not know
// (HubSpot adds new ones). Such events are stored for audit and never applied.
const EventOther = "other"

// SourceHubSpot is the Source of every event the Receiver stores.
const SourceHubSpot = "hubspot"

// Limits on what one webhook event may carry. They keep every stored value
// inside its column (ExternalID VARCHAR(255), ObjectType VARCHAR(100)).
const (
	// MaxEventsPerDelivery is the most events one delivery may carry (HubSpot's maximum).
	MaxEventsPerDelivery = hubspot.MaxWebhookBatch
	// MaxIDLength is the longest object id (or other id) accepted.
	MaxIDLength = 100
	// MaxSubscriptionTypeLength is the longest subscriptionType accepted.
	MaxSubscriptionTypeLength = 100
)

var (
	// ErrMalformed is wrapped by every ParseEvents error: the body is not a JSON
	// array of well-formed HubSpot events.
	ErrMalformed = errors.New("inbound: malformed webhook delivery")
	// ErrTooManyEvents means a delivery carries more than MaxEventsPerDelivery events.
	ErrTooManyEvents = errors.New("inbound: too many events in one delivery")
)

// ParseError reports which event of a delivery is malformed and why. It matches
// ErrMalformed with errors.Is.
type ParseError struct {
	// Index is the event's position in the array, or -1 for the body as a whole.
	Index int
	// Field names the offending field, "" when the event as a whole is wrong.
	Field string
	// Reason says what is wrong, in a few words.
	Reason string
}

// Error names the event and field that did not parse.
func (e *ParseError) Error() string {
	switch {
	case e.Index < 0:
		return "malformed webhook delivery: " + e.Reason
	case e.Field == "":
		return fmt.Sprintf("event %d: %s", e.Index, e.Reason)
	default:
		return fmt.Sprintf("event %d: %s: %s", e.Index, e.Field, e.Reason)
	}
}

// Is reports whether target is ErrMalformed.
func (e *ParseError) Is(target error) bool { return target == ErrMalformed }

// Event is the canonical form of one HubSpot webhook event, stored as the
// inbound row's Payload. Ids are decimal strings (HubSpot sends numbers, some
// integrations strings); optional fields are omitted when HubSpot did not send
// them. JSON shape, version 1:
//
//	{"v":1,"source":"hubspot","subscriptionType":"contact.propertyChange",
//	 "hubspotObject":"contact","objectType":"contacts","eventType":"update",
//	 "objectId":"123","occurredAt":1700000000000,"eventId":"7","portalId":"62515",
//	 "appId":"1000","subscriptionId":"4","propertyName":"firstname",
//	 "propertyValue":"Ada","changeSource":"CRM_UI","sourceId":"userId:1",
//	 "changeFlag":"NEW","primaryObjectId":"1","mergedObjectIds":["2"],
//	 "newObjectId":"1","numberOfPropertiesMoved":3,"associationType":"CONTACT_TO_COMPANY",
//	 "fromObjectId":"1","toObjectId":"9","associationRemoved":false,
//	 "isPrimaryAssociation":true,"echo":false}
//
// AttemptNumber is deliberately absent: it differs between retries of one change.
type Event struct {
	Version          int    `json:"v"`
	Source           string `json:"source"`
	SubscriptionType string `json:"subscriptionType"`
	// HubSpotObject is the subscription type's prefix, e.g. "contact".
	HubSpotObject string `json:"hubspotObject"`
	// ObjectType is the local object type ("contacts"), or HubSpotObject when unmapped.
	ObjectType string `json:"objectType"`
	// EventType is store.EventCreate, EventUpdate, ... or EventOther.
	EventType string `json:"eventType"`
	ObjectID  string `json:"objectId"`
	// OccurredAt is HubSpot's occurredAt, epoch milliseconds.
	OccurredAt     int64  `json:"occurredAt"`
	EventID        string `json:"eventId,omitempty"`
	PortalID       string `json:"portalId,omitempty"`
	AppID          string `json:"appId,omitempty"`
	SubscriptionID string `json:"subscriptionId,omitempty"`

	PropertyName string `json:"propertyName,omitempty"`
	// PropertyValue is set for propertyChange events; "" (or absent) clears the property.
	PropertyValue *string `json:"propertyValue,omitempty"`
	ChangeSource  string  `json:"changeSource,omitempty"`
	SourceID      string  `json:"sourceId,omitempty"`
	ChangeFlag    string  `json:"changeFlag,omitempty"`

	PrimaryObjectID         string   `json:"primaryObjectId,omitempty"`
	MergedObjectIDs         []string `json:"mergedObjectIds,omitempty"`
	NewObjectID             string   `json:"newObjectId,omitempty"`
	NumberOfPropertiesMoved int64    `json:"numberOfPropertiesMoved,omitempty"`

	AssociationType      string `json:"associationType,omitempty"`
	FromObjectID         string `json:"fromObjectId,omitempty"`
	ToObjectID           string `json:"toObjectId,omitempty"`
	AssociationRemoved   *bool  `json:"associationRemoved,omitempty"`
	IsPrimaryAssociation *bool  `json:"isPrimaryAssociation,omitempty"`

	// Echo is true when the receiver recognised the event as the echo of this
	// app's own write (see IsEcho), and stored it processed. The worker checks
	// again, with its own AppID, the events that reach it: those stored before
	// echoes were stored processed, or by a receiver without an AppID.
	Echo bool `json:"echo,omitempty"`
}

// OccurredTime returns OccurredAt as a time.Time.
func (e Event) OccurredTime() time.Time { return time.UnixMilli(e.OccurredAt).UTC() }

// IsEcho reports whether the event is the echo of a write made by the app with
// id appID: changeSource INTEGRATION or API (HubSpot's names for app writes)
// with sourceId naming the app. HubSpot writes sourceId either as the bare app
// id or prefixed ("app:1000"); both are recognised. An empty appID matches
// nothing.
func (e Event) IsEcho(appID string) bool {
	if appID == "" {
		return false
	}
	switch strings.ToUpper(e.ChangeSource) {
	case "INTEGRATION", "API":
	default:
		return false
	}
	sid := e.SourceID
	if i := strings.LastIndexByte(sid, ':'); i >= 0 {
		sid = sid[i+1:]
	}
	return sid == appID
}

// ParsedEvent is one validated event of a delivery.
type ParsedEvent struct {
	// Event is the canonical event; ObjectType is still the HubSpot name until
	// Resolve maps it.
	Event Event
	// Raw is the event's JSON exactly as received.
	Raw json.RawMessage
	// IdempotencyKey is stable across HubSpot's retries and duplicates of the change.
	IdempotencyKey string
}

// eventTypes maps subscription type suffixes to inbound event types.
var eventTypes = map[string]string{
	"creation":          store.EventCreate,
	"propertyChange":    store.EventUpdate,
	"deletion":          store.EventDelete,
	"merge":             store.EventMerge,
	"restore":           store.EventRestore,
	"associationChange": store.EventAssociation,
	"privacyDeletion":   store.EventPrivacyDelete,
}

// EventTypeOf returns the inbound event type of a HubSpot subscription type,
// EventOther when the suffix is unknown.
func EventTypeOf(subscriptionType string) string {
	_, suffix, _ := strings.Cut(subscriptionType, ".")
	if t, ok := eventTypes[suffix]; ok {
		return t
	}
	return EventOther
}

// ParseEvents parses and validates a webhook delivery body: a JSON array of at
// most MaxEventsPerDelivery events, each with objectId, subscriptionType and
// occurredAt. It never panics. Errors wrap ErrMalformed (a *ParseError) or
// ErrTooManyEvents. Unknown fields are ignored; HubSpot adds fields over time.
func ParseEvents(body []byte) ([]ParsedEvent, error) {
	out, bad, err := ParseDelivery(body)
	if err != nil {
		return nil, err
	}
	if len(bad) > 0 {
		return nil, bad[0].Err
	}
	return out, nil
}

// BadEvent is a malformed event of a delivery that ParseDelivery skipped.
type BadEvent struct {
	// Raw is the event as sent.
	Raw json.RawMessage
	// Err says which event and field is wrong; it matches ErrMalformed.
	Err *ParseError
}

// ParseDelivery is ParseEvents that does not let one malformed event sink the
// delivery: it returns the well-formed events and, in bad, each malformed one
// with its reason, in order. err is for the body as a whole: not valid UTF-8,
// not a JSON array, or more than MaxEventsPerDelivery events.
func ParseDelivery(body []byte) (events []ParsedEvent, bad []BadEvent, err error) {
	if !utf8.Valid(body) {
		return nil, nil, &ParseError{Index: -1, Reason: "body is not valid UTF-8"}
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return nil, nil, &ParseError{Index: -1, Reason: "body is not a JSON array"}
	}
	if !jsonvalid.Valid(body) {
		var raws []json.RawMessage
		err := json.Unmarshal(body, &raws) // for its message
		return nil, nil, &ParseError{Index: -1, Reason: "invalid JSON: " + err.Error()}
	}
	// The events are slices of one copy of body, which the caller keeps.
	raws, ok := splitArray(bytes.Clone(body))
	if !ok {
		return nil, nil, &ParseError{Index: -1, Reason: "body is not a JSON array"}
	}
	if len(raws) > MaxEventsPerDelivery {
		return nil, nil, fmt.Errorf("%w: %d events, at most %d", ErrTooManyEvents, len(raws), MaxEventsPerDelivery)
	}
	out := make([]ParsedEvent, 0, len(raws))
	for i, raw := range raws {
		ev, err := parseEvent(raw)
		if err != nil {
			err.Index = i
			bad = append(bad, BadEvent{Raw: raw, Err: err})
			continue
		}
		fixed, ok := storable(raw)
		if !ok {
			bad = append(bad, BadEvent{Raw: raw, Err: &ParseError{Index: i, Reason: fmt.Sprintf("nested deeper than %d levels", MaxEventDepth)}})
			continue
		}
		out = append(out, ParsedEvent{Event: ev, Raw: fixed, IdempotencyKey: IdempotencyKey(ev)})
	}
	return out, bad, nil
}

// wireEvent is a HubSpot event as sent, with every id kept raw so that numbers
// and strings are both accepted.
type wireEvent struct {
	EventID                 json.RawMessage   `json:"eventId"`
	SubscriptionID          json.RawMessage   `json:"subscriptionId"`
	PortalID                json.RawMessage   `json:"portalId"`
	AppID                   json.RawMessage   `json:"appId"`
	OccurredAt              json.RawMessage   `json:"occurredAt"`
	SubscriptionType        json.RawMessage   `json:"subscriptionType"`
	ObjectID                json.RawMessage   `json:"objectId"`
	PropertyName            json.RawMessage   `json:"propertyName"`
	PropertyValue           json.RawMessage   `json:"propertyValue"`
	ChangeSource            json.RawMessage   `json:"changeSource"`
	SourceID                json.RawMessage   `json:"sourceId"`
	ChangeFlag              json.RawMessage   `json:"changeFlag"`
	PrimaryObjectID         json.RawMessage   `json:"primaryObjectId"`
	MergedObjectIDs         []json.RawMessage `json:"mergedObjectIds"`
	NewObjectID             json.RawMessage   `json:"newObjectId"`
	NumberOfPropertiesMoved json.RawMessage   `json:"numberOfPropertiesMoved"`
	AssociationType         json.RawMessage   `json:"associationType"`
	FromObjectID            json.RawMessage   `json:"fromObjectId"`
	ToObjectID              json.RawMessage   `json:"toObjectId"`
	AssociationRemoved      json.RawMessage   `json:"associationRemoved"`
	IsPrimaryAssociation    json.RawMessage   `json:"isPrimaryAssociation"`
}

// maxMergedIDs bounds mergedObjectIds; HubSpot merges two records at a time.
const maxMergedIDs = 1000

func parseEvent(raw json.RawMessage) (Event, *ParseError) {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return Event{}, &ParseError{Reason: "not a JSON object"}
	}
	w, err := decodeWire(raw)
	if err != nil {
		return Event{}, &ParseError{Reason: "wrong field type: " + err.Error()}
	}
	ev := Event{Version: EventVersion, Source: SourceHubSpot}
	var perr *ParseError
	fail := func(field, reason string) {
		if perr == nil {
			perr = &ParseError{Field: field, Reason: reason}
		}
	}
	// Required fields.
	st, ok := textField(w.SubscriptionType)
	switch {
	case !ok || st == "":
		fail("subscriptionType", "required string")
	case len(st) > MaxSubscriptionTypeLength:
		fail("subscriptionType", "too long")
	case !strings.Contains(st, ".") || strings.HasPrefix(st, "."):
		fail("subscriptionType", `want "object.event", e.g. "contact.creation"`)
	}
	ev.SubscriptionType = st
	ev.HubSpotObject, _, _ = strings.Cut(st, ".")
	ev.ObjectType = ev.HubSpotObject
	ev.EventType = EventTypeOf(st)
	if ev.ObjectID, ok = idField(w.ObjectID); !ok || ev.ObjectID == "" {
		fail("objectId", "required id (number or string)")
	}
	if ev.OccurredAt, ok = intField(w.OccurredAt); !ok || ev.OccurredAt <= 0 {
		fail("occurredAt", "required positive epoch milliseconds")
	}
	// Optional fields: present with the wrong type is still an error, since a
	// value we cannot read is one we cannot deduplicate or apply correctly.
	ids := []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"eventId", w.EventID, &ev.EventID},
		{"subscriptionId", w.SubscriptionID, &ev.SubscriptionID},
		{"portalId", w.PortalID, &ev.PortalID},
		{"appId", w.AppID, &ev.AppID},
		{"primaryObjectId", w.PrimaryObjectID, &ev.PrimaryObjectID},
		{"newObjectId", w.NewObjectID, &ev.NewObjectID},
		{"fromObjectId", w.FromObjectID, &ev.FromObjectID},
		{"toObjectId", w.ToObjectID, &ev.ToObjectID},
		{"sourceId", w.SourceID, &ev.SourceID},
	}
	for _, f := range ids {
		if *f.dst, ok = idField(f.raw); !ok {
			fail(f.name, "want a number or a short string")
		}
	}
	texts := []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{
		{"propertyName", w.PropertyName, &ev.PropertyName},
		{"changeSource", w.ChangeSource, &ev.ChangeSource},
		{"changeFlag", w.ChangeFlag, &ev.ChangeFlag},
		{"associationType", w.AssociationType, &ev.AssociationType},
	}
	for _, f := range texts {
		if *f.dst, ok = textField(f.raw); !ok {
			fail(f.name, "want a string")
		}
	}
	if present(w.PropertyValue) {
		// HubSpot sends property values as strings; be lenient with numbers and
		// booleans some integrations produce, keeping their JSON text.
		v, ok := textField(w.PropertyValue)
		if !ok {
			v, ok = scalarText(w.PropertyValue)
		}
		if !ok {
			fail("propertyValue", "want a string")
		}
		ev.PropertyValue = &v
	} else if ev.EventType == store.EventUpdate {
		// HubSpot omits an empty propertyValue: the property was cleared.
		empty := ""
		ev.PropertyValue = &empty
	}
	if ev.EventType == store.EventUpdate && ev.PropertyName == "" {
		fail("propertyName", "required for propertyChange events")
	}
	if len(w.MergedObjectIDs) > maxMergedIDs {
		fail("mergedObjectIds", "too many ids")
	}
	for _, r := range w.MergedObjectIDs {
		id, ok := idField(r)
		if !ok || id == "" {
			fail("mergedObjectIds", "want ids")
			break
		}
		ev.MergedObjectIDs = append(ev.MergedObjectIDs, id)
	}
	if n, ok := intField(w.NumberOfPropertiesMoved); ok {
		ev.NumberOfPropertiesMoved = n
	} else {
		fail("numberOfPropertiesMoved", "want an integer")
	}
	var okR, okP bool
	ev.AssociationRemoved, okR = boolField(w.AssociationRemoved)
	ev.IsPrimaryAssociation, okP = boolField(w.IsPrimaryAssociation)
	if !okR {
		fail("associationRemoved", "want a boolean")
	}
	if !okP {
		fail("isPrimaryAssociation", "want a boolean")
	}
	if perr != nil {
		return Event{}, perr
	}
	return ev, nil
}

func present(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// textField reads an optional JSON string; absent or null is "". NUL bytes are
// replaced: PostgreSQL's jsonb and text types cannot hold them.
func textField(raw json.RawMessage) (string, bool) {
	if !present(raw) {
		return "", true
	}
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		// No escapes, and UTF-8 (json.Unmarshal would replace what is not):
		// the text between the quotes, which the delivery's json.Valid found
		// free of control bytes, is the string.
		return string(raw[1 : n-1]), true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD"), true
}

// scalarText renders a JSON number or boolean as its text.
func scalarText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", false
	}
	switch v.(type) {
	case float64, bool:
		return string(raw), true
	}
	return "", false
}

// idField reads an optional id: a non-negative JSON integer or a string of at
// most MaxIDLength printable bytes. Absent or null is "".
func idField(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if !present(raw) {
		return "", true
	}
	if raw[0] == '"' {
		s, ok := textField(raw)
		s = strings.TrimSpace(s)
		if !ok || len(s) > MaxIDLength || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == utf8.RuneError }) {
			return "", false
		}
		return s, true
	}
	n, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return "", false
	}
	return strconv.FormatUint(n, 10), true
}

// intField reads an optional integer (a JSON number or a string of digits);
// absent or null is 0.
func intField(raw json.RawMessage) (int64, bool) {
	raw = bytes.TrimSpace(raw)
	if !present(raw) {
		return 0, true
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0, false
		}
		raw = []byte(strings.TrimSpace(s))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return n, err == nil
}

func boolField(raw json.RawMessage) (*bool, bool) {
	if !present(raw) {
		return nil, true
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		return nil, false
	}
	return &b, true
}

// IdempotencyKey returns the key that identifies ev's change across HubSpot's
// retries and duplicate deliveries: "hubspot:" and the hex SHA-256 of the
// length-prefixed fields that describe the change (never attemptNumber, never
// eventId alone).
func IdempotencyKey(ev Event) string {
	h := sha256.New()
	var lenBuf [8]byte
	put := func(s string) {
		binary.BigEndian.PutUint64(lenBuf[:], uint64(len(s)))
		h.Write(lenBuf[:])
		h.Write([]byte(s))
	}
	put("hubspot-webhook-v1")
	put(ev.PortalID)
	put(ev.SubscriptionType)
	put(ev.ObjectID)
	put(ev.EventID)
	put(strconv.FormatInt(ev.OccurredAt, 10))
	put(ev.PropertyName)
	if ev.PropertyValue != nil {
		put("=" + *ev.PropertyValue)
	} else {
		put("")
	}
	put(ev.ChangeSource)
	put(ev.SourceID)
	put(ev.PrimaryObjectID)
	merged := slices.Clone(ev.MergedObjectIDs)
	slices.Sort(merged)
	put(strings.Join(merged, ","))
	put(ev.NewObjectID)
	put(ev.AssociationType)
	put(ev.FromObjectID)
	put(ev.ToObjectID)
	put(boolText(ev.AssociationRemoved))
	return "hubspot:" + hex.EncodeToString(h.Sum(nil))
}

func boolText(b *bool) string {
	switch {
	case b == nil:
		return ""
	case *b:
		return "true"
	default:
		return "false"
	}
}

// Resolve maps the event's object type through m (nil means mapping.Default())
// and marks echoes of appID, returning the row to store. An echo's row has
// Status store.StatusProcessed: there is nothing to apply, so it is stored
// for audit and never claimed.
func (p ParsedEvent) Resolve(m *mapping.Set, appID string) (store.InboundEvent, error) {
	if m == nil {
		m = mapping.Default()
	}
	ev := p.Event
	if obj, ok := m.ForWebhook(ev.SubscriptionType); ok {
		ev.ObjectType = obj.ObjectType
	}
	ev.Echo = ev.IsEcho(appID)
	payload, err := json.Marshal(ev)
	if err != nil {
		return store.InboundEvent{}, fmt.Errorf("encode canonical event: %w", err)
	}
	row := store.InboundEvent{
		Source:         SourceHubSpot,
		ExternalID:     ev.ObjectID,
		ObjectType:     ev.ObjectType,
		EventType:      ev.EventType,
		Payload:        payload,
		RawPayload:     p.Raw,
		IdempotencyKey: p.IdempotencyKey,
	}
	if ev.Echo {
		row.Status = store.StatusProcessed
	}
	return row, nil
}
