// Package mapping translates between local record fields and HubSpot properties.
//
// Each object type has a declared, versioned mapping: which local field is which
// HubSpot property, its type, and in which direction it syncs. Fields without a
// mapping are never sent to HubSpot, and HubSpot properties without one are never
// written locally. HubSpot property values are strings; local fields are JSON
// values (string, number, bool, null).
//
// # Upserting by a unique property
//
// Object.IDProperty names a HubSpot property with unique values that the
// outbound worker upserts by while it does not yet know an object's HubSpot
// id: a retried write then updates the object the lost attempt created
// instead of creating a duplicate. Contacts use "email" (unique by HubSpot's
// design). Companies and deals have no such built-in property, so the default
// mapping upserts them by RecordIDProperty ("hubsync_record_id") holding the
// local record id (IDField RecordIDField). On a real portal that property must
// exist before the first sync: create a single-line text property named
// hubsync_record_id on companies and on deals with "Require unique values for
// this property" enabled (HubSpot accepts custom unique properties as
// idProperty of batch upsert and batch read). Without it HubSpot rejects the
// upserts with a validation error naming the property. A custom object's
// mapping may use the same scheme with a unique property of its own.
package mapping

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// FieldType is the local JSON type of a field.
type FieldType string

// Field types.
const (
	String FieldType = "string"
	Number FieldType = "number"
	Bool   FieldType = "bool"
)

// Direction says which way a field syncs.
type Direction string

// Directions. The zero value means Both.
const (
	Both          Direction = ""
	ToHubSpotOnly Direction = "to_hubspot"
	FromHubSpot   Direction = "from_hubspot"
)

// Field maps one local field to one HubSpot property.
type Field struct {
	Local     string
	HubSpot   string
	Type      FieldType // default String
	Direction Direction
}

// Object is the mapping of one object type.
type Object struct {
	// ObjectType is the local object type, e.g. "contacts".
	ObjectType string
	// HubSpotType is HubSpot's object type path segment, e.g. "contacts" or "2-123".
	HubSpotType string
	// WebhookName is the prefix of HubSpot webhook subscription types for this
	// object, e.g. "contact" in "contact.propertyChange".
	WebhookName string
	// Version increases whenever the mapping changes meaning.
	Version int
	// IDProperty is the unique HubSpot property to upsert by when the HubSpot id is
	// not yet known (contacts: "email"); IDField is the local field holding it,
	// or RecordIDField when its value is the local record id (then IDProperty
	// must not also be a mapped field's HubSpot property, and must have unique
	// values enabled in HubSpot; see the package doc). Without an IDProperty
	// the outbound worker plain-creates objects, and an ambiguous failure (a
	// lost answer, a crash before the link is stored) can leave a duplicate.
	IDProperty string
	IDField    string
	Fields     []Field
	// DriftPolicy is what a drift scan does with this object's ambiguous
	// differences (package drift): "" or "report", "report_only",
	// "hubspot_wins", "local_wins" or "newest_wins".
	DriftPolicy string
}

// RecordIDField as an Object's IDField says that the IDProperty value is the
// local record id itself rather than a field of the record.
const RecordIDField = "$id"

// RecordIDProperty is the HubSpot property the default mapping stores the
// local record id in (companies, deals). It must exist in the portal with
// unique values enabled; see the package doc.
const RecordIDProperty = "hubsync_record_id"

// IDFromRecordID reports whether the IDProperty value is the local record id
// (IDField is RecordIDField).
func (o Object) IDFromRecordID() bool { return o.IDField == RecordIDField }

// IDValue returns the IDProperty value of local record recordID with fields:
// the record id for RecordIDField, else the trimmed string value of IDField;
// "" when the object has no IDProperty or the field is missing or not a string.
func (o Object) IDValue(recordID string, fields map[string]any) string {
	switch {
	case o.IDProperty == "":
		return ""
	case o.IDFromRecordID():
		return recordID
	}
	v, ok := fields[o.IDField].(string)
	if !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// Set holds the mappings of all object types.
type Set struct {
	byType    map[string]Object
	byWebhook map[string]Object
	// subs and subsVersion are the subscriptions mapping (subscriptions.go).
	subs        map[subscriptionKey]Subscription
	subsVersion int
}

// NewSet validates objs and returns a Set.
func NewSet(objs ...Object) (*Set, error) {
	s := &Set{byType: map[string]Object{}, byWebhook: map[string]Object{}}
	for _, o := range objs {
		if err := o.validate(); err != nil {
			return nil, err
		}
		if _, dup := s.byType[o.ObjectType]; dup {
			return nil, fmt.Errorf("mapping: object type %q is mapped twice; keep one", o.ObjectType)
		}
		s.byType[o.ObjectType] = o
		if o.WebhookName != "" {
			s.byWebhook[o.WebhookName] = o
		}
	}
	return s, nil
}

func (o Object) validate() error {
	if o.ObjectType == "" || o.HubSpotType == "" {
		return fmt.Errorf("mapping: ObjectType and HubSpotType are required (got %q, %q)", o.ObjectType, o.HubSpotType)
	}
	seenL, seenH := map[string]bool{}, map[string]bool{}
	for _, f := range o.Fields {
		if f.Local == "" || f.HubSpot == "" {
			return fmt.Errorf("mapping %s: a field needs both Local and HubSpot names (got %q, %q)", o.ObjectType, f.Local, f.HubSpot)
		}
		if seenL[f.Local] || seenH[f.HubSpot] {
			return fmt.Errorf("mapping %s: field %s/%s is mapped twice", o.ObjectType, f.Local, f.HubSpot)
		}
		seenL[f.Local], seenH[f.HubSpot] = true, true
		switch f.Type {
		case "", String, Number, Bool:
		default:
			return fmt.Errorf("mapping %s: field %s has unknown type %q; use string, number or bool", o.ObjectType, f.Local, f.Type)
		}
	}
	if (o.IDProperty == "") != (o.IDField == "") {
		return fmt.Errorf("mapping %s: set IDProperty and IDField together", o.ObjectType)
	}
	if strings.HasPrefix(o.IDField, "$") && o.IDField != RecordIDField {
		return fmt.Errorf("mapping %s: IDField %q is not a field; use a local field name, or %q for the record id", o.ObjectType, o.IDField, RecordIDField)
	}
	if o.IDFromRecordID() && seenH[o.IDProperty] {
		return fmt.Errorf("mapping %s: IDProperty %q holds the record id (IDField %q) and cannot also be a mapped field's HubSpot property; pick another IDProperty", o.ObjectType, o.IDProperty, RecordIDField)
	}
	return nil
}

// Lookup returns the mapping of a local object type.
func (s *Set) Lookup(objectType string) (Object, bool) {
	o, ok := s.byType[objectType]
	return o, ok
}

// ForWebhook returns the mapping whose WebhookName prefixes subscriptionType
// ("contact.propertyChange" → contacts).
func (s *Set) ForWebhook(subscriptionType string) (Object, bool) {
	name, _, _ := strings.Cut(subscriptionType, ".")
	o, ok := s.byWebhook[name]
	return o, ok
}

// ObjectTypes lists the mapped local object types, sorted.
func (s *Set) ObjectTypes() []string {
	return slices.Sorted(maps.Keys(s.byType))
}

// Default returns hubsync's mapping for contacts (version 1, upserted by
// email), companies and deals (version 2: upserted by RecordIDProperty, which
// the portal must define; see the package doc).
func Default() *Set {
	s, err := NewSet(
		Object{
			ObjectType: "contacts", HubSpotType: "contacts", WebhookName: "contact", Version: 1,
			IDProperty: "email", IDField: "email",
			Fields: []Field{
				{Local: "email", HubSpot: "email"},
				{Local: "first_name", HubSpot: "firstname"},
				{Local: "last_name", HubSpot: "lastname"},
				{Local: "phone", HubSpot: "phone"},
				{Local: "company", HubSpot: "company"},
				{Local: "lifecycle_stage", HubSpot: "lifecyclestage"},
			},
		},
		Object{
			ObjectType: "companies", HubSpotType: "companies", WebhookName: "company", Version: 2,
			IDProperty: RecordIDProperty, IDField: RecordIDField,
			Fields: []Field{
				{Local: "name", HubSpot: "name"},
				{Local: "domain", HubSpot: "domain"},
				{Local: "industry", HubSpot: "industry"},
				{Local: "city", HubSpot: "city"},
				{Local: "employees", HubSpot: "numberofemployees", Type: Number},
			},
		},
		Object{
			ObjectType: "deals", HubSpotType: "deals", WebhookName: "deal", Version: 2,
			IDProperty: RecordIDProperty, IDField: RecordIDField,
			Fields: []Field{
				{Local: "name", HubSpot: "dealname"},
				{Local: "amount", HubSpot: "amount", Type: Number},
				{Local: "stage", HubSpot: "dealstage"},
				{Local: "pipeline", HubSpot: "pipeline"},
				{Local: "close_date", HubSpot: "closedate"},
			},
		},
	)
	if err != nil {
		panic(err) // the default mapping is a constant; a failure is a bug here
	}
	return s
}

func (o Object) outbound(f Field) bool { return f.Direction != FromHubSpot }
func (o Object) inbound(f Field) bool  { return f.Direction != ToHubSpotOnly }

// ToHubSpot returns the HubSpot properties of the mapped, outbound fields present
// in fields. A null field becomes "" (HubSpot's way to clear a property).
func (o Object) ToHubSpot(fields map[string]any) (map[string]string, error) {
	props := map[string]string{}
	for _, f := range o.Fields {
		v, ok := fields[f.Local]
		if !ok || !o.outbound(f) {
			continue
		}
		s, err := format(v)
		if err != nil {
			return nil, fmt.Errorf("mapping %s.%s: %w", o.ObjectType, f.Local, err)
		}
		props[f.HubSpot] = s
	}
	return props, nil
}

// Diff returns the HubSpot properties that differ between the old and new
// snapshots: changed or added fields with their new value, removed fields as "".
// A nil old snapshot means every present field changed.
func (o Object) Diff(old, new map[string]any) (map[string]string, error) {
	props := map[string]string{}
	for _, f := range o.Fields {
		if !o.outbound(f) {
			continue
		}
		nv, nok := new[f.Local]
		ov, ook := old[f.Local]
		if !nok && !ook {
			continue
		}
		ns, err := format(nv)
		if err != nil {
			return nil, fmt.Errorf("mapping %s.%s: %w", o.ObjectType, f.Local, err)
		}
		os, err := format(ov)
		if err != nil {
			return nil, fmt.Errorf("mapping %s.%s: %w", o.ObjectType, f.Local, err)
		}
		if old == nil || nok != ook || ns != os {
			props[f.HubSpot] = ns
		}
	}
	return props, nil
}

// FromHubSpot returns the local fields of the mapped, inbound properties present
// in props. An empty string becomes null (a cleared property). A value that does
// not parse as the field's type is an error.
func (o Object) FromHubSpot(props map[string]string) (map[string]any, error) {
	fields := map[string]any{}
	for _, f := range o.Fields {
		v, ok := props[f.HubSpot]
		if !ok || !o.inbound(f) {
			continue
		}
		lv, err := parse(f.Type, v)
		if err != nil {
			return nil, fmt.Errorf("mapping %s: property %s=%q: %w", o.ObjectType, f.HubSpot, v, err)
		}
		fields[f.Local] = lv
	}
	return fields, nil
}

// LocalField returns the local field mapped to a HubSpot property.
func (o Object) LocalField(hubspotProperty string) (Field, bool) {
	for _, f := range o.Fields {
		if f.HubSpot == hubspotProperty {
			return f, true
		}
	}
	return Field{}, false
}

// HubSpotProperties lists the mapped HubSpot property names, for batch reads.
func (o Object) HubSpotProperties() []string {
	out := make([]string, 0, len(o.Fields))
	for _, f := range o.Fields {
		out = append(out, f.HubSpot)
	}
	return out
}

// ReadProperties lists the properties to read of an object: the mapped ones
// and IDProperty, so that a read object can be matched to the local record
// that created it (for companies and deals, hubsync_record_id is no mapped
// field, yet it names the record).
func (o Object) ReadProperties() []string {
	out := o.HubSpotProperties()
	if o.IDProperty != "" && !slices.Contains(out, o.IDProperty) {
		out = append(out, o.IDProperty)
	}
	return out
}

// format renders a local JSON value as a HubSpot property value.
func format(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", fmt.Errorf("number %v cannot be sent", x)
		}
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case json.Number:
		// Integers keep every digit (beyond float64's 2^53); anything else is
		// written in plain decimal, as for float64, never in exponent form.
		if _, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
			return x.String(), nil
		}
		if isDigits(x.String()) {
			return strings.TrimLeft(x.String(), "0"), nil
		}
		f, err := x.Float64()
		if err != nil {
			return "", fmt.Errorf("number %q cannot be sent: %w", x.String(), err)
		}
		return format(f)
	default:
		return "", fmt.Errorf("unsupported value of type %T; use a string, number, bool or null", v)
	}
}

// isDigits reports whether s is a non-negative integer of any length.
func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// parse turns a HubSpot property value into a local JSON value of type t.
func parse(t FieldType, v string) (any, error) {
	if v == "" {
		return nil, nil
	}
	switch t {
	case Number:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("not a number")
		}
		return f, nil
	case Bool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("not a boolean")
		}
		return b, nil
	default:
		return v, nil
	}
}
