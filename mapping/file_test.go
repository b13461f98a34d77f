package mapping_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/mapping"
)

// issueExample is the minimal shape issue 12 promises to accept.
const issueExample = `objects:
  contacts:                 # local object type (records API path segment)
    hubspot_type: contacts  # or a custom object's type id such as 2-123456
    webhook_name: contact   # prefix of webhook subscription types
    id_property: email      # unique HubSpot property to upsert by
    id_field: email         # local field holding it; "$id" = the local record id
    fields:
      email: email          # local field: HubSpot property
      first_name: firstname
      score: {property: hs_score, type: number, direction: to_hubspot}
`

func TestParseIssueExample(t *testing.T) {
	t.Parallel()
	s, err := mapping.Parse([]byte(issueExample))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.Lookup("contacts")
	if !ok {
		t.Fatal("contacts not mapped")
	}
	want := mapping.Object{
		ObjectType: "contacts", HubSpotType: "contacts", WebhookName: "contact", Version: 1,
		IDProperty: "email", IDField: "email",
		Fields: []mapping.Field{
			{Local: "email", HubSpot: "email"},
			{Local: "first_name", HubSpot: "firstname"},
			{Local: "score", HubSpot: "hs_score", Type: mapping.Number, Direction: mapping.ToHubSpotOnly},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("contacts = %+v\nwant       %+v", got, want)
	}
	if o, ok := s.ForWebhook("contact.propertyChange"); !ok || o.ObjectType != "contacts" {
		t.Fatalf("ForWebhook = %+v, %v", o, ok)
	}
}

func TestParseJSONAndDefaults(t *testing.T) {
	t.Parallel()
	s, err := mapping.Parse([]byte(`{"objects": {"cars": {"hubspot_type": "2-123456", "version": 3,
		"id_property": "hubsync_record_id", "id_field": "$id",
		"fields": {"plate": "plate", "sold": {"property": "sold", "type": "bool", "direction": "from_hubspot"}, "km": {"property": "km", "direction": "both"}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cars, _ := s.Lookup("cars")
	if cars.HubSpotType != "2-123456" || cars.Version != 3 || cars.WebhookName != "" || !cars.IDFromRecordID() {
		t.Fatalf("cars = %+v", cars)
	}
	if f, _ := cars.LocalField("sold"); f.Type != mapping.Bool || f.Direction != mapping.FromHubSpot {
		t.Fatalf("sold = %+v", f)
	}
	if f, _ := cars.LocalField("km"); f.Direction != mapping.Both || f.Type != "" {
		t.Fatalf("km = %+v", f)
	}

	s, err = mapping.Parse([]byte("objects:\n  things:\n    fields: {a: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Lookup("things"); o.HubSpotType != "things" || o.Version != 1 {
		t.Fatalf("defaults = %+v", o)
	}
}

func TestParseErrorsNameLineAndFix(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		yaml string
		want []string // each must appear in the message
	}{
		{"empty file", "", []string{"line 1", "empty"}},
		{"tab indent", "objects:\n\tcontacts:\n\t\tfields: {email: email}\n", []string{"line 2", "replace the tabs"}},
		{"not YAML", "objects: [contacts\n", []string{"line", "fix the YAML"}},
		{"empty objects", "objects: {}\n", []string{"line 1", "objects is empty"}},
		{"no objects key", "version: 1\n", []string{"line 1", `unknown key "version"`, "objects"}},
		{"unknown object key", "objects:\n  contacts:\n    hubspot_typ: contacts\n    fields: {email: email}\n",
			[]string{"line 3", `unknown key "hubspot_typ"`, "hubspot_type"}},
		{"unknown field key", "objects:\n  contacts:\n    fields:\n      score: {property: hs_score, typ: number}\n",
			[]string{"line 4", `unknown key "typ"`, "property, type, direction"}},
		{"unknown type", "objects:\n  contacts:\n    fields:\n      email: email\n      score: {property: hs_score, type: integer}\n",
			[]string{"line 5", `unknown type "integer"`, "string, number or bool"}},
		{"unknown direction", "objects:\n  contacts:\n    fields:\n      score:\n        property: hs_score\n        direction: outbound\n",
			[]string{"line 6", `unknown direction "outbound"`, "to_hubspot"}},
		{"duplicate property", "objects:\n  contacts:\n    fields:\n      email: email\n      mail: email\n",
			[]string{"line 5", `property "email" is already mapped on line 4`}},
		{"duplicate field", "objects:\n  contacts:\n    fields:\n      email: email\n      email: email2\n",
			[]string{"line 5", `"email" appears twice`, "line 4"}},
		{"id_field not a field", "objects:\n  contacts:\n    id_property: email\n    id_field: mail\n    fields:\n      email: email\n",
			[]string{"line 4", `id_field "mail" is not one of its fields`, `"$id"`}},
		{"id_property without id_field", "objects:\n  contacts:\n    id_property: email\n    fields: {email: email}\n",
			[]string{"line 3", "id_property without id_field"}},
		{"record id property mapped", "objects:\n  deals:\n    id_property: ref\n    id_field: $id\n    fields: {ref: ref}\n",
			[]string{"line 3", `id_property "ref" holds the record id`}},
		{"no fields", "objects:\n  contacts:\n    hubspot_type: contacts\n",
			[]string{"line 2", "has no fields"}},
		{"bad property name", "objects:\n  contacts:\n    fields:\n      first_name: First Name\n",
			[]string{"line 4", `"First Name" is not a HubSpot property name`}},
		{"field without property", "objects:\n  contacts:\n    fields:\n      score: {type: number}\n",
			[]string{"line 4", "has no property:"}},
		{"bad version", "objects:\n  contacts:\n    version: two\n    fields: {email: email}\n",
			[]string{"line 3", `version "two"`}},
		{"duplicate webhook name", "objects:\n  a:\n    webhook_name: contact\n    fields: {x: x}\n  b:\n    webhook_name: contact\n    fields: {y: y}\n",
			[]string{"line 5", `webhook_name "contact" is already used by the object on line 2`}},
		{"not a mapping", "objects:\n  - contacts\n", []string{"line 2", "objects must be a mapping"}},
		{"yaml syntax", "objects:\n  contacts: [\n", []string{"line"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := mapping.Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("Parse accepted it: %v", s.ObjectTypes())
			}
			if !errors.Is(err, mapping.ErrInvalidFile) {
				t.Errorf("error does not wrap ErrInvalidFile: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseReportsEveryError(t *testing.T) {
	t.Parallel()
	_, err := mapping.Parse([]byte("objects:\n  a:\n    fields: {x: {property: x, type: int}}\n  b:\n    colour: red\n    fields: {y: y}\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "line 5") {
		t.Fatalf("want both errors (lines 3 and 5), got %v", err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "mapping.yaml")
	if err := os.WriteFile(path, []byte(issueExample), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mapping.Load(path); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("objects:\n  x:\n    fields: {a: {property: b, direction: up}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mapping.Load(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("Load(bad) = %v; want the path and the line", err)
	}
	if _, err := mapping.Load(filepath.Join(dir, "missing.yaml")); err == nil || errors.Is(err, mapping.ErrInvalidFile) || !strings.Contains(err.Error(), "default mapping") {
		t.Fatalf("Load(missing) = %v; want a file error that says what to do", err)
	}
	// A file past the limit (a log, a dump named by mistake) is not parsed.
	huge := filepath.Join(dir, "huge.yaml")
	if err := os.WriteFile(huge, append([]byte(issueExample), bytes.Repeat([]byte("# padding\n"), mapping.MaxFileBytes/10+1)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := mapping.Load(huge); !errors.Is(err, mapping.ErrInvalidFile) || !strings.Contains(err.Error(), strconv.Itoa(mapping.MaxFileBytes)) {
		t.Fatalf("Load(huge) = %v; want ErrInvalidFile naming the limit", err)
	}
}

func FuzzParseMapping(f *testing.F) {
	for _, s := range []string{
		issueExample, "", "objects: {}", "objects:\n  a:\n    fields: {x: x}\n",
		`{"objects":{"d":{"id_property":"p","id_field":"$id","fields":{"a":{"property":"b","type":"number"}}}}}`,
		"objects: &a\n  x: *a\n", "objects:\n  a: !!binary aGk=\n", "- [\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := mapping.Parse(data)
		if err != nil {
			if !errors.Is(err, mapping.ErrInvalidFile) {
				t.Fatalf("error does not wrap ErrInvalidFile: %v", err)
			}
			if !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "yaml:") {
				t.Fatalf("error names no line: %v", err)
			}
			return
		}
		types := s.ObjectTypes()
		if len(types) == 0 {
			t.Fatal("an accepted file maps no object")
		}
		for _, typ := range types {
			o, ok := s.Lookup(typ)
			if !ok || o.HubSpotType == "" || len(o.Fields) == 0 || o.Version < 1 {
				t.Fatalf("accepted object %q = %+v", typ, o)
			}
			if _, err := mapping.NewSet(o); err != nil {
				t.Fatalf("accepted object %q does not validate: %v", typ, err)
			}
		}
	})
}

func TestParseDriftPolicy(t *testing.T) {
	s, err := mapping.Parse([]byte("objects:\n  contacts:\n    drift_policy: hubspot_wins\n    fields:\n      email: email\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := s.Lookup("contacts"); o.DriftPolicy != "hubspot_wins" {
		t.Fatalf("DriftPolicy = %q; want hubspot_wins", o.DriftPolicy)
	}
	_, err = mapping.Parse([]byte("objects:\n  contacts:\n    drift_policy: always\n    fields:\n      email: email\n"))
	if err == nil || !strings.Contains(err.Error(), "line 3") || !strings.Contains(err.Error(), "drift_policy") {
		t.Fatalf("an unknown drift_policy gave %v; want an error naming line 3 and drift_policy", err)
	}
}
