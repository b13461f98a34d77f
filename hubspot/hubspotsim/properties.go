package hubspotsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
)

// Property is a property definition as GET /crm/v3/properties/{objectType}
// returns it.
type Property struct {
	Name  string `json:"name"`
	Label string `json:"label"`
	// Type is string, number, date, datetime, enumeration or bool.
	Type      string `json:"type"`
	FieldType string `json:"fieldType"`
	GroupName string `json:"groupName"`
	// HasUniqueValue is set at creation only; such a property can be an
	// idProperty of batch upsert and batch read.
	HasUniqueValue       bool                 `json:"hasUniqueValue"`
	Calculated           bool                 `json:"calculated"`
	ModificationMetadata ModificationMetadata `json:"modificationMetadata"`
	Options              []PropertyOption     `json:"options"`
}

// ModificationMetadata says what a client may change about a property.
type ModificationMetadata struct {
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

// propertyTypes are HubSpot's property data types.
var propertyTypes = []string{"string", "number", "date", "datetime", "enumeration", "bool"}

var propertyName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func text(name, label, group string) Property {
	return Property{Name: name, Label: label, Type: "string", FieldType: "text", GroupName: group,
		ModificationMetadata: ModificationMetadata{Archivable: true}}
}

func typed(name, label, group, typ, fieldType string) Property {
	p := text(name, label, group)
	p.Type, p.FieldType = typ, fieldType
	return p
}

func readOnly(p Property) Property {
	p.ModificationMetadata = ModificationMetadata{ReadOnlyDefinition: true, ReadOnlyValue: true}
	return p
}

func unique(p Property) Property {
	p.HasUniqueValue = true
	return p
}

func enum(name, label, group string, values ...string) Property {
	p := typed(name, label, group, "enumeration", "select")
	for _, v := range values {
		p.Options = append(p.Options, PropertyOption{Label: v, Value: v})
	}
	return p
}

// systemProperties every object type has; clients cannot write them.
func systemProperties(info string) []Property {
	return []Property{
		readOnly(unique(typed("hs_object_id", "Record ID", info, "number", "number"))),
		readOnly(typed("createdate", "Create Date", info, "datetime", "date")),
		readOnly(typed("hs_lastmodifieddate", "Last Modified Date", info, "datetime", "date")),
	}
}

// builtinProperties are the definitions a new portal has for objectType (a
// normalized name). companies and deals also carry hubsync_record_id, the
// unique property hubsync's default mapping upserts them by.
func builtinProperties(objectType string) []Property {
	switch objectType {
	case "contacts":
		const g = "contactinformation"
		return append(systemProperties(g),
			unique(text("email", "Email", g)),
			text("firstname", "First Name", g),
			text("lastname", "Last Name", g),
			typed("phone", "Phone Number", g, "string", "phonenumber"),
			text("company", "Company Name", g),
			text("jobtitle", "Job Title", g),
			text("city", "City", g),
			enum("lifecyclestage", "Lifecycle Stage", g, "subscriber", "lead", "marketingqualifiedlead", "salesqualifiedlead", "opportunity", "customer", "evangelist", "other"),
			readOnly(typed("lastmodifieddate", "Last Modified Date", g, "datetime", "date")),
			readOnly(typed("hs_additional_emails", "Additional email addresses", g, "enumeration", "checkbox")),
			func() Property {
				p := readOnly(typed("num_associated_deals", "Number of Associated Deals", g, "number", "number"))
				p.Calculated = true
				return p
			}(),
		)
	case "companies":
		const g = "companyinformation"
		return append(systemProperties(g),
			text("name", "Company name", g),
			text("domain", "Company Domain Name", g),
			enum("industry", "Industry", g, "COMPUTER_SOFTWARE", "FINANCIAL_SERVICES", "HOSPITAL_HEALTH_CARE", "RETAIL"),
			text("city", "City", g),
			typed("phone", "Phone Number", g, "string", "phonenumber"),
			typed("numberofemployees", "Number of Employees", g, "number", "number"),
			unique(text("hubsync_record_id", "hubsync record id", g)),
		)
	case "deals":
		const g = "dealinformation"
		return append(systemProperties(g),
			text("dealname", "Deal Name", g),
			typed("amount", "Amount", g, "number", "number"),
			enum("dealstage", "Deal Stage", g, "appointmentscheduled", "qualifiedtobuy", "closedwon", "closedlost"),
			enum("pipeline", "Pipeline", g, "default"),
			typed("closedate", "Close Date", g, "datetime", "date"),
			unique(text("hubsync_record_id", "hubsync record id", g)),
		)
	}
	return systemProperties("information")
}

// propertiesLocked returns objectType's definitions, seeding the built-ins.
func (s *Server) propertiesLocked(objectType string) map[string]Property {
	t := normalizeType(objectType)
	if s.propDefs == nil {
		s.propDefs = map[string]map[string]Property{}
	}
	defs := s.propDefs[t]
	if defs == nil {
		defs = map[string]Property{}
		for _, p := range builtinProperties(t) {
			defs[p.Name] = p
		}
		s.propDefs[t] = defs
	}
	return defs
}

// Properties returns objectType's property definitions, sorted by name.
func (s *Server) Properties(objectType string) []Property {
	s.mu.Lock()
	defer s.mu.Unlock()
	defs := s.propertiesLocked(objectType)
	return sortedProperties(defs)
}

func sortedProperties(defs map[string]Property) []Property {
	out := make([]Property, 0, len(defs))
	for _, k := range slices.Sorted(maps.Keys(defs)) {
		out = append(out, defs[k])
	}
	return out
}

// CreateProperty defines a property on objectType as a portal admin would
// (ErrInvalid for a bad or existing name or an unknown type). Unset Label,
// FieldType and GroupName are filled in.
func (s *Server) CreateProperty(objectType string, p Property) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, err := s.createPropertyLocked(objectType, p)
	return err
}

func (s *Server) createPropertyLocked(objectType string, p Property) (Property, error) {
	if !propertyName.MatchString(p.Name) {
		return Property{}, fmt.Errorf("%w: property name %q must start with a lowercase letter and hold only lowercase letters, digits and _", ErrInvalid, p.Name)
	}
	if !slices.Contains(propertyTypes, p.Type) {
		return Property{}, fmt.Errorf("%w: property type %q is not one of %v", ErrInvalid, p.Type, propertyTypes)
	}
	defs := s.propertiesLocked(objectType)
	if _, dup := defs[p.Name]; dup {
		return Property{}, fmt.Errorf("%w: a property named %q already exists", ErrInvalid, p.Name)
	}
	if p.Label == "" {
		p.Label = p.Name
	}
	if p.FieldType == "" {
		p.FieldType = "text"
	}
	if p.GroupName == "" {
		p.GroupName = "information"
	}
	p.Calculated = false
	p.ModificationMetadata = ModificationMetadata{Archivable: true}
	defs[p.Name] = p
	return p, nil
}

func (s *Server) handleListProperties(r *http.Request, _ []byte) apiResp {
	s.mu.Lock()
	defer s.mu.Unlock()
	return apiResp{status: http.StatusOK, body: map[string]any{"results": sortedProperties(s.propertiesLocked(r.PathValue("type")))}}
}

func (s *Server) handleCreateProperty(r *http.Request, body []byte) apiResp {
	var in struct {
		Name           string           `json:"name"`
		Label          string           `json:"label"`
		Type           string           `json:"type"`
		FieldType      string           `json:"fieldType"`
		GroupName      string           `json:"groupName"`
		HasUniqueValue bool             `json:"hasUniqueValue"`
		Options        []PropertyOption `json:"options"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	if in.Name == "" || in.Label == "" || in.Type == "" || in.FieldType == "" || in.GroupName == "" {
		return validationErr("name, label, type, fieldType and groupName are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, dup := s.propertiesLocked(r.PathValue("type"))[in.Name]; dup {
		return errResp(http.StatusConflict, "OBJECT_ALREADY_EXISTS", fmt.Sprintf("A property named '%s' already exists.", in.Name))
	}
	p, err := s.createPropertyLocked(r.PathValue("type"), Property{
		Name: in.Name, Label: in.Label, Type: in.Type, FieldType: in.FieldType, GroupName: in.GroupName,
		HasUniqueValue: in.HasUniqueValue, Options: in.Options,
	})
	if err != nil {
		return validationErr(err.Error())
	}
	return apiResp{status: http.StatusCreated, body: p}
}
