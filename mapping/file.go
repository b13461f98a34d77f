package mapping

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// MaxFileBytes bounds a mapping file; a real one is a few KiB.
const MaxFileBytes = 1 << 20

// ErrInvalidFile is wrapped by every error of Parse and Load about the file's
// content. The message names the line and the fix.
var ErrInvalidFile = errors.New("invalid mapping file")

// Load reads and validates the mapping file at path (YAML; JSON is valid
// YAML). See Parse for the shape. Errors name path and line.
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mapping file: %w; give the path of a readable YAML file, or none for the default mapping", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mapping file %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("mapping file %s: %w: larger than %d bytes; a mapping file is a few KiB, so check that the path names one", path, ErrInvalidFile, MaxFileBytes)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("mapping file %s: %w", path, err)
	}
	return s, nil
}

// Parse validates a mapping file's content and returns its Set:
//
//	objects:
//	  contacts:                 # local object type (records API path segment)
//	    hubspot_type: contacts  # or a custom object's type id such as 2-123456
//	    webhook_name: contact   # prefix of webhook subscription types
//	    version: 1              # optional; raise it when the mapping changes meaning
//	    id_property: email      # unique HubSpot property to upsert by
//	    id_field: email         # local field holding it; "$id" = the local record id
//	    fields:
//	      email: email          # local field: HubSpot property
//	      score: {property: hs_score, type: number, direction: to_hubspot}
//
// hubspot_type defaults to the local type; without webhook_name the object
// takes no webhooks; version defaults to 1; type is string (default), number
// or bool; direction is both (default), to_hubspot or from_hubspot. Every
// problem found is reported, each as "line N: what is wrong; the fix".
func Parse(data []byte) (*Set, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		hint := "; fix the YAML there (a mapping file is nested maps indented with spaces, as in the README's example)"
		if bytes.Contains(data, []byte("\n\t")) || bytes.HasPrefix(data, []byte("\t")) {
			hint = "; YAML indents with spaces: replace the tabs at the start of lines"
		}
		return nil, fmt.Errorf("%w: %v%s", ErrInvalidFile, err, hint)
	}
	p := &fileParser{subsVersion: 1}
	objs := p.document(&doc)
	if len(p.errs) > 0 {
		return nil, fmt.Errorf("%w:\n%w", ErrInvalidFile, errors.Join(p.errs...))
	}
	s, err := NewSet(objs...)
	if err == nil {
		s, err = s.WithSubscriptions(p.subsVersion, p.subs...)
	}
	if err != nil { // the checks above cover NewSet's; this is a safety net
		return nil, fmt.Errorf("%w: %w", ErrInvalidFile, err)
	}
	return s, nil
}

// fileParser walks the YAML tree collecting every error with its line.
type fileParser struct {
	errs        []error
	subs        []Subscription
	subsVersion int
}

func (p *fileParser) errorf(n *yaml.Node, format string, a ...any) {
	p.errs = append(p.errs, fmt.Errorf("line %d: %s", n.Line, fmt.Sprintf(format, a...)))
}

// maxAliasDepth bounds alias chains; YAML forbids cycles, this is a guard.
const maxAliasDepth = 64

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasDepth; i++ {
		n = n.Alias
	}
	return n
}

// entries returns a mapping node's key/value pairs, reporting duplicate keys.
func (p *fileParser) entries(n *yaml.Node, what string) [][2]*yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		line := 0
		if n != nil {
			line = n.Line
		}
		p.errs = append(p.errs, fmt.Errorf("line %d: %s must be a mapping of key: value", line, what))
		return nil
	}
	seen := map[string]int{}
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), deref(n.Content[i+1])
		if k == nil || v == nil {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			p.errorf(k, "a key in %s must be a plain name", what)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			p.errorf(k, "%q appears twice in %s (first on line %d); keep one", k.Value, what, first)
			continue
		}
		seen[k.Value] = k.Line
		out = append(out, [2]*yaml.Node{k, v})
	}
	return out
}

// scalar returns a non-empty scalar's text.
func (p *fileParser) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s must be a name", what)
		return "", false
	}
	v := strings.TrimSpace(n.Value)
	if v == "" {
		p.errorf(n, "%s is empty", what)
		return "", false
	}
	return v, true
}

var (
	// localName is a local object type or field: a records API path segment
	// and a JSON key.
	localName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*$`)
	// propertyName is a HubSpot internal property name.
	propertyName = regexp.MustCompile(`^[a-z0-9_]+$`)
	// hubspotType is a HubSpot object type: a name, an id such as 2-123456 or
	// a fully qualified name such as p_cars.
	hubspotType = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

var objectKeys = []string{"hubspot_type", "webhook_name", "version", "id_property", "id_field", "fields", "drift_policy"}

// DriftPolicies are the values of an object's drift_policy (see package drift).
var DriftPolicies = []string{"report", "report_only", "hubspot_wins", "local_wins", "newest_wins"}

func (p *fileParser) document(doc *yaml.Node) []Object {
	if doc.Kind == 0 || len(doc.Content) == 0 {
		p.errs = append(p.errs, errors.New("line 1: the file is empty; write an objects: mapping (see the README's \"Mapping file\")"))
		return nil
	}
	root := deref(doc.Content[0])
	var objects *yaml.Node
	for _, kv := range p.entries(root, "the file") {
		switch kv[0].Value {
		case "objects":
			objects = kv[1]
		case "subscriptions":
			p.subs = p.subscriptions(kv[1])
		case "subscriptions_version":
			p.subsVersion = p.subscriptionsVersion(kv[1])
		default:
			p.errorf(kv[0], "unknown key %q at the top level; use objects, subscriptions or subscriptions_version", kv[0].Value)
		}
	}
	if objects == nil {
		if root != nil && root.Kind == yaml.MappingNode {
			p.errorf(root, "no objects: key; map at least one object type under objects:")
		}
		return nil
	}
	objs := p.entries(objects, "objects")
	if len(objs) == 0 && deref(objects).Kind == yaml.MappingNode {
		p.errorf(objects, "objects is empty; map at least one object type, e.g. contacts:")
	}
	var out []Object
	webhooks := map[string]int{}
	for _, kv := range objs {
		o, ok := p.object(kv[0], kv[1])
		if !ok {
			continue
		}
		if o.WebhookName != "" {
			if first, dup := webhooks[o.WebhookName]; dup {
				p.errorf(kv[0], "webhook_name %q is already used by the object on line %d; give each object its own", o.WebhookName, first)
			}
			webhooks[o.WebhookName] = kv[0].Line
		}
		out = append(out, o)
	}
	return out
}

func (p *fileParser) object(key, n *yaml.Node) (Object, bool) {
	before := len(p.errs)
	name := key.Value
	if !localName.MatchString(name) {
		p.errorf(key, "object type %q is not a plain name; use letters, digits, _ . or -", name)
	}
	o := Object{ObjectType: name, HubSpotType: name, Version: 1}
	what := "object " + name
	var fields, idField, idProperty *yaml.Node
	for _, kv := range p.entries(n, what) {
		k, v := kv[0], kv[1]
		switch k.Value {
		case "hubspot_type":
			if s, ok := p.scalar(v, what+": hubspot_type"); ok {
				if !hubspotType.MatchString(s) {
					p.errorf(v, "%s: hubspot_type %q is not an object type; use e.g. contacts or a custom object's id such as 2-123456", what, s)
				}
				o.HubSpotType = s
			}
		case "webhook_name":
			if s, ok := p.scalar(v, what+": webhook_name"); ok {
				if strings.Contains(s, ".") {
					p.errorf(v, "%s: webhook_name %q must be the prefix before the dot, e.g. contact for contact.propertyChange", what, s)
				}
				o.WebhookName = s
			}
		case "version":
			n, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
				p.errorf(v, "%s: version %q is not a positive integer; write e.g. version: 1", what, v.Value)
			} else {
				o.Version = n
			}
		case "id_property":
			if s, ok := p.scalar(v, what+": id_property"); ok {
				o.IDProperty, idProperty = s, v
			}
		case "id_field":
			if s, ok := p.scalar(v, what+": id_field"); ok {
				o.IDField, idField = s, v
			}
		case "fields":
			fields = v
		case "drift_policy":
			if s, ok := p.scalar(v, what+": drift_policy"); ok {
				if !slices.Contains(DriftPolicies, s) {
					p.errorf(v, "%s: drift_policy %q is unknown; use one of %s", what, s, strings.Join(DriftPolicies, ", "))
				}
				o.DriftPolicy = s
			}
		default:
			p.errorf(k, "%s: unknown key %q; use one of %s", what, k.Value, strings.Join(objectKeys, ", "))
		}
	}
	if fields == nil {
		p.errorf(key, "%s has no fields:; map at least one local field to a HubSpot property", what)
	} else {
		o.Fields = p.fields(fields, what)
	}
	switch {
	case idProperty != nil && idField == nil:
		p.errorf(idProperty, "%s: id_property without id_field; add id_field: naming the local field that holds it, or \"$id\" for the record id", what)
	case idField != nil && idProperty == nil:
		p.errorf(idField, "%s: id_field without id_property; add id_property: naming the unique HubSpot property", what)
	case idField != nil:
		if o.IDFromRecordID() {
			if f, ok := o.LocalField(o.IDProperty); ok {
				p.errorf(idProperty, "%s: id_property %q holds the record id (id_field \"$id\") and cannot also be field %s's property; pick another id_property", what, o.IDProperty, f.Local)
			}
		} else if !propertyName.MatchString(o.IDProperty) {
			p.errorf(idProperty, "%s: id_property %q is not a HubSpot property name (lowercase letters, digits, _)", what, o.IDProperty)
		}
		if !o.IDFromRecordID() && !slices.ContainsFunc(o.Fields, func(f Field) bool { return f.Local == o.IDField }) {
			p.errorf(idField, "%s: id_field %q is not one of its fields; add it under fields:, or use \"$id\" for the local record id", what, o.IDField)
		}
	}
	if len(p.errs) > before {
		return Object{}, false
	}
	return o, true
}

var fieldKeys = []string{"property", "type", "direction"}

func (p *fileParser) fields(n *yaml.Node, what string) []Field {
	entries := p.entries(n, what+": fields")
	if len(entries) == 0 && deref(n).Kind == yaml.MappingNode {
		p.errorf(n, "%s: fields is empty; map at least one local field, e.g. email: email", what)
	}
	props := map[string]int{}
	var out []Field
	for _, kv := range entries {
		k, v := kv[0], kv[1]
		f := Field{Local: k.Value}
		if !localName.MatchString(f.Local) {
			p.errorf(k, "%s: field %q is not a plain name; use letters, digits, _ . or -", what, f.Local)
		}
		fw := what + ": field " + f.Local
		var propNode *yaml.Node
		switch v.Kind {
		case yaml.ScalarNode:
			if s, ok := p.scalar(v, fw); ok {
				f.HubSpot, propNode = s, v
			}
		case yaml.MappingNode:
			for _, fkv := range p.entries(v, fw) {
				fk, fv := fkv[0], fkv[1]
				switch fk.Value {
				case "property":
					if s, ok := p.scalar(fv, fw+": property"); ok {
						f.HubSpot, propNode = s, fv
					}
				case "type":
					s, _ := p.scalar(fv, fw+": type")
					switch FieldType(s) {
					case String, Number, Bool:
						f.Type = FieldType(s)
					case "":
					default:
						p.errorf(fv, "%s: unknown type %q; use string, number or bool", fw, s)
					}
				case "direction":
					s, _ := p.scalar(fv, fw+": direction")
					switch s {
					case "both":
						f.Direction = Both
					case string(ToHubSpotOnly), string(FromHubSpot):
						f.Direction = Direction(s)
					case "":
					default:
						p.errorf(fv, "%s: unknown direction %q; use both, to_hubspot or from_hubspot", fw, s)
					}
				default:
					p.errorf(fk, "%s: unknown key %q; use one of %s", fw, fk.Value, strings.Join(fieldKeys, ", "))
				}
			}
			if propNode == nil {
				p.errorf(v, "%s has no property:; name the HubSpot property it maps to", fw)
			}
		default:
			p.errorf(v, "%s must be a HubSpot property name or {property, type, direction}", fw)
		}
		if propNode == nil {
			continue
		}
		if !propertyName.MatchString(f.HubSpot) {
			p.errorf(propNode, "%s: %q is not a HubSpot property name; use its internal name (lowercase letters, digits, _), e.g. firstname", fw, f.HubSpot)
			continue
		}
		if first, dup := props[f.HubSpot]; dup {
			p.errorf(propNode, "%s: property %q is already mapped on line %d; map each HubSpot property once", fw, f.HubSpot, first)
			continue
		}
		props[f.HubSpot] = propNode.Line
		out = append(out, f)
	}
	return out
}
