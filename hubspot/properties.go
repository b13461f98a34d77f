package hubspot

import (
	"context"
	"fmt"
	"net/http"
)

// Property data types (Property.Type).
const (
	PropertyString      = "string"
	PropertyNumber      = "number"
	PropertyDate        = "date"
	PropertyDateTime    = "datetime"
	PropertyEnumeration = "enumeration"
	PropertyBool        = "bool"
)

// Property is a property definition of an object type
// (GET /crm/v3/properties/{objectType}).
type Property struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Type is one of the Property* data types.
	Type string `json:"type"`
	// FieldType is how HubSpot's UI edits it: text, number, select, date, ….
	FieldType string `json:"fieldType"`
	GroupName string `json:"groupName"`
	// HasUniqueValue means no two records share a value; only such a property
	// can be the idProperty of batch upsert and batch read.
	HasUniqueValue bool `json:"hasUniqueValue"`
	// Calculated properties are computed by HubSpot and cannot be written.
	Calculated           bool                         `json:"calculated"`
	ModificationMetadata PropertyModificationMetadata `json:"modificationMetadata"`
	Options              []PropertyOption             `json:"options"`
}

// PropertyModificationMetadata says what a client may change about a property.
type PropertyModificationMetadata struct {
	Archivable         bool `json:"archivable"`
	ReadOnlyDefinition bool `json:"readOnlyDefinition"`
	// ReadOnlyValue means clients cannot write the property's value.
	ReadOnlyValue bool `json:"readOnlyValue"`
}

// PropertyOption is one choice of an enumeration property.
type PropertyOption struct {
	Label string `json:"label"`
	Value string `json:"value"`
}

// Writable reports whether a client can write the property's value.
func (p Property) Writable() bool { return !p.Calculated && !p.ModificationMetadata.ReadOnlyValue }

// PropertyCreate defines a new property (POST /crm/v3/properties/{objectType}).
type PropertyCreate struct {
	Name      string `json:"name"`
	Label     string `json:"label"`
	Type      string `json:"type"`
	FieldType string `json:"fieldType"`
	GroupName string `json:"groupName"`
	// HasUniqueValue can only be set at creation.
	HasUniqueValue bool             `json:"hasUniqueValue,omitempty"`
	Options        []PropertyOption `json:"options,omitempty"`
}

func propertiesPath(t ObjectType) string { return "/crm/v3/properties/" + escapePath(string(t)) }

// GetProperties lists every property definition of t.
func (c *Client) GetProperties(ctx context.Context, t ObjectType) ([]Property, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	var w struct {
		Results []Property `json:"results"`
	}
	if _, err := c.do(ctx, http.MethodGet, propertiesPath(t), nil, nil, &w); err != nil {
		return nil, err
	}
	return w.Results, nil
}

// CreateProperty defines a property on t and returns it as HubSpot stored it.
// An existing name is a 409 (KindConflict).
func (c *Client) CreateProperty(ctx context.Context, t ObjectType, in PropertyCreate) (*Property, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if in.Name == "" || in.Type == "" {
		return nil, fmt.Errorf("%w: PropertyCreate needs Name and Type", ErrInvalidArgument)
	}
	var p Property
	if _, err := c.do(ctx, http.MethodPost, propertiesPath(t), nil, in, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
