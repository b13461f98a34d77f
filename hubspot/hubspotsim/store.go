package hubspotsim

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// Object is a simulated CRM record as the programmatic API returns it.
type Object struct {
	// ID is the object id, a decimal string.
	ID string `json:"id"`
	// Properties holds every stored property, automatic ones included.
	Properties map[string]string `json:"properties"`
	// CreatedAt is when the object was created (by the injected clock).
	CreatedAt time.Time `json:"createdAt"`
	// UpdatedAt is when a property last changed.
	UpdatedAt time.Time `json:"updatedAt"`
	// Archived is true for deleted and merged-away objects.
	Archived bool `json:"archived"`
	// MergedInto is, for a merged-away object, the id of the primary.
	MergedInto string `json:"mergedInto,omitempty"`
}

type object struct {
	id         int64
	props      map[string]string
	createdAt  time.Time
	updatedAt  time.Time
	archived   bool
	archivedAt time.Time
	mergedInto int64
	// history holds each property's versions, oldest first (history.go).
	history map[string][]version
}

func (o *object) export() Object {
	out := Object{
		ID:         strconv.FormatInt(o.id, 10),
		Properties: maps.Clone(o.props),
		CreatedAt:  o.createdAt,
		UpdatedAt:  o.updatedAt,
		Archived:   o.archived,
	}
	if o.mergedInto != 0 {
		out.MergedInto = strconv.FormatInt(o.mergedInto, 10)
	}
	return out
}

type typeStore struct {
	name    string
	objs    map[int64]*object
	byEmail map[string]int64 // contacts only: lowercased email → live owner
}

// source says who made a change, for webhook changeSource/sourceId.
type source struct {
	changeSource string
	sourceID     string
}

func (s *Server) apiSource() source {
	return source{changeSource: "INTEGRATION", sourceID: strconv.FormatInt(s.cfg.AppID, 10)}
}

var userSource = source{changeSource: "CRM_UI"}

// systemProps are set by the simulator, never produce propertyChange events,
// and cannot be written by clients (readOnlyProps).
var systemProps = map[string]bool{
	"hs_object_id": true, "createdate": true, "lastmodifieddate": true,
	"hs_lastmodifieddate": true, "hs_merged_object_ids": true, "hs_additional_emails": true,
}

var readOnlyProps = map[string]bool{
	"hs_object_id": true, "lastmodifieddate": true, "hs_lastmodifieddate": true,
	"hs_merged_object_ids": true, "hs_additional_emails": true, "createdate": true,
}

// normalizeType maps HubSpot's object type ids and case variants to a name.
func normalizeType(t string) string {
	t = strings.ToLower(t)
	switch t {
	case "0-1", "contact":
		return "contacts"
	case "0-2", "company":
		return "companies"
	case "0-3", "deal":
		return "deals"
	case "0-5", "ticket":
		return "tickets"
	}
	return t
}

// singular is the webhook subscriptionType prefix of an object type.
func singular(t string) string {
	switch t {
	case "contacts":
		return "contact"
	case "companies":
		return "company"
	case "deals":
		return "deal"
	case "tickets":
		return "ticket"
	case "products":
		return "product"
	case "line_items":
		return "line_item"
	}
	return "object"
}

func (s *Server) storeLocked(objectType string) *typeStore {
	t := normalizeType(objectType)
	ts := s.types[t]
	if ts == nil {
		ts = &typeStore{name: t, objs: map[int64]*object{}, byEmail: map[string]int64{}}
		s.types[t] = ts
	}
	return ts
}

func parseID(id string) (int64, bool) {
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil && n > 0
}

// liveLocked returns the non-archived object with id.
func (ts *typeStore) live(id string) *object {
	n, ok := parseID(id)
	if !ok {
		return nil
	}
	o := ts.objs[n]
	if o == nil || o.archived {
		return nil
	}
	return o
}

// readable returns the object for a read: live objects, and for a
// merged-away id the surviving primary, as HubSpot redirects merged ids.
// With archived (?archived=true) it returns only a deleted object, as
// HubSpot's archived reads do.
func (ts *typeStore) readable(id string, archived bool) *object {
	n, ok := parseID(id)
	if !ok {
		return nil
	}
	o := ts.objs[n]
	if archived {
		if o == nil || !o.archived || o.mergedInto != 0 {
			return nil
		}
		return o
	}
	for range 10 { // merge chains are short; bound them anyway
		if o == nil {
			return nil
		}
		if !o.archived {
			return o
		}
		if o.mergedInto == 0 {
			return nil
		}
		o = ts.objs[o.mergedInto]
	}
	return nil
}

// findByProp finds a live object by a unique property (email is indexed).
func (ts *typeStore) findByProp(prop, value string) *object {
	if prop == "email" && ts.name == "contacts" {
		if id, ok := ts.byEmail[strings.ToLower(value)]; ok {
			if o := ts.objs[id]; o != nil && !o.archived {
				return o
			}
		}
		return nil
	}
	for _, id := range ts.sortedIDs() {
		o := ts.objs[id]
		if !o.archived && o.props[prop] == value {
			return o
		}
	}
	return nil
}

func (ts *typeStore) sortedIDs() []int64 {
	ids := slices.Collect(maps.Keys(ts.objs))
	slices.Sort(ids)
	return ids
}

// emailOwner returns the live contact owning email (case-insensitive), if any.
func (ts *typeStore) emailOwner(email string) (int64, bool) {
	if ts.name != "contacts" || email == "" {
		return 0, false
	}
	id, ok := ts.byEmail[strings.ToLower(email)]
	if !ok {
		return 0, false
	}
	if o := ts.objs[id]; o == nil || o.archived {
		return 0, false
	}
	return id, true
}

// normalizeProps lowercases contact emails and checks them.
func normalizeProps(objectType string, props map[string]string) error {
	if objectType != "contacts" {
		return nil
	}
	if e, ok := props["email"]; ok && e != "" {
		e = strings.ToLower(strings.TrimSpace(e))
		if !validEmail(e) {
			return fmt.Errorf("Email address %s is invalid", props["email"])
		}
		props["email"] = e
	}
	return nil
}

func validEmail(e string) bool {
	at := strings.LastIndexByte(e, '@')
	if at <= 0 || at == len(e)-1 || strings.ContainsAny(e, " \t\r\n,;<>") {
		return false
	}
	return strings.Contains(e[at+1:], ".")
}

func readOnlyViolation(props map[string]string) string {
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if readOnlyProps[k] {
			return k
		}
	}
	return ""
}

func fmtTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// createLocked stores a new object; callers have validated props.
func (s *Server) createLocked(ts *typeStore, props map[string]string, src source) *object {
	now := s.cfg.Now()
	s.nextID++
	o := &object{id: s.nextID, props: map[string]string{}, createdAt: now, updatedAt: now}
	for k, v := range props {
		if v != "" {
			o.props[k] = v
			o.record(k, v, now, src)
		}
	}
	o.props["hs_object_id"] = strconv.FormatInt(o.id, 10)
	o.props["createdate"] = fmtTime(now)
	o.props["lastmodifieddate"] = fmtTime(now)
	o.props["hs_lastmodifieddate"] = fmtTime(now)
	ts.objs[o.id] = o
	if e := o.props["email"]; e != "" && ts.name == "contacts" {
		ts.byEmail[e] = o.id
	}
	s.counters.ObjectsCreated++
	s.emitLocked(ts.name, src, hubspot.WebhookEvent{SubscriptionType: ".creation", ObjectID: o.id, ChangeFlag: "NEW"})
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if props[k] != "" && !systemProps[k] {
			s.emitLocked(ts.name, src, hubspot.WebhookEvent{SubscriptionType: ".propertyChange", ObjectID: o.id, PropertyName: k, PropertyValue: props[k]})
		}
	}
	return o
}

// updateLocked applies props (validated) and reports whether anything changed.
func (s *Server) updateLocked(ts *typeStore, o *object, props map[string]string, src source) bool {
	now := s.cfg.Now()
	changed := false
	for _, k := range slices.Sorted(maps.Keys(props)) {
		v := props[k]
		if o.props[k] == v {
			continue
		}
		if k == "email" && ts.name == "contacts" {
			if old := o.props["email"]; old != "" && ts.byEmail[old] == o.id {
				delete(ts.byEmail, old)
			}
			if v != "" {
				ts.byEmail[v] = o.id
			}
		}
		if v == "" {
			delete(o.props, k)
		} else {
			o.props[k] = v
		}
		o.record(k, v, now, src)
		changed = true
		s.emitLocked(ts.name, src, hubspot.WebhookEvent{SubscriptionType: ".propertyChange", ObjectID: o.id, PropertyName: k, PropertyValue: v})
	}
	if changed {
		o.updatedAt = now
		o.props["lastmodifieddate"] = fmtTime(now)
		o.props["hs_lastmodifieddate"] = fmtTime(now)
	}
	return changed
}

func (s *Server) archiveLocked(ts *typeStore, o *object, src source) {
	now := s.cfg.Now()
	o.archived = true
	o.archivedAt = now
	o.updatedAt = now
	if e := o.props["email"]; e != "" && ts.byEmail[e] == o.id {
		delete(ts.byEmail, e)
	}
	s.emitLocked(ts.name, src, hubspot.WebhookEvent{SubscriptionType: ".deletion", ObjectID: o.id, ChangeFlag: "DELETED"})
}

// mergeLocked merges merged into primary: empty properties of the primary
// are filled from merged, merged is archived with a pointer to primary.
func (s *Server) mergeLocked(ts *typeStore, primary, merged *object, src source) {
	now := s.cfg.Now()
	moved := 0
	for _, k := range slices.Sorted(maps.Keys(merged.props)) {
		if systemProps[k] || k == "email" || primary.props[k] != "" {
			continue
		}
		primary.props[k] = merged.props[k]
		primary.record(k, merged.props[k], now, src)
		moved++
	}
	ids := []string{}
	if prev := primary.props["hs_merged_object_ids"]; prev != "" {
		ids = append(ids, prev)
	}
	ids = append(ids, strconv.FormatInt(merged.id, 10))
	if prev := merged.props["hs_merged_object_ids"]; prev != "" {
		ids = append(ids, prev)
	}
	primary.props["hs_merged_object_ids"] = strings.Join(ids, ";")
	if ts.name == "contacts" {
		var emails []string
		if prev := primary.props["hs_additional_emails"]; prev != "" {
			emails = append(emails, prev)
		}
		for _, e := range []string{merged.props["email"], merged.props["hs_additional_emails"]} {
			if e != "" {
				emails = append(emails, e)
			}
		}
		if len(emails) > 0 {
			primary.props["hs_additional_emails"] = strings.Join(emails, ";")
		}
		// The merged-away addresses now find the primary, as in HubSpot.
		for e, id := range ts.byEmail {
			if id == merged.id {
				ts.byEmail[e] = primary.id
			}
		}
		if e := merged.props["email"]; e != "" {
			ts.byEmail[e] = primary.id
		}
	}
	primary.updatedAt = now
	primary.props["lastmodifieddate"] = fmtTime(now)
	primary.props["hs_lastmodifieddate"] = fmtTime(now)
	merged.archived = true
	merged.archivedAt = now
	merged.mergedInto = primary.id
	s.emitLocked(ts.name, src, hubspot.WebhookEvent{
		SubscriptionType: ".merge", ObjectID: primary.id, PrimaryObjectID: primary.id,
		MergedObjectIDs: []int64{merged.id}, NewObjectID: primary.id, NumberOfPropertiesMoved: moved,
	})
}

// UserCreate creates an object as a HubSpot user would in the CRM UI
// (webhook changeSource CRM_UI). A duplicate contact email is a *ConflictError.
func (s *Server) UserCreate(objectType string, props map[string]string) (string, error) {
	props = maps.Clone(props)
	if props == nil {
		props = map[string]string{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(objectType)
	if err := normalizeProps(ts.name, props); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if k := readOnlyViolation(props); k != "" {
		return "", fmt.Errorf("%w: property %s is read-only", ErrInvalid, k)
	}
	if id, ok := ts.emailOwner(props["email"]); ok {
		return "", &ConflictError{ExistingID: strconv.FormatInt(id, 10)}
	}
	o := s.createLocked(ts, props, userSource)
	return strconv.FormatInt(o.id, 10), nil
}

// UserUpdate changes properties as a HubSpot user would; "" clears one.
func (s *Server) UserUpdate(objectType, id string, props map[string]string) error {
	props = maps.Clone(props)
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(objectType)
	o := ts.live(id)
	if o == nil {
		return fmt.Errorf("%w: %s %s", ErrNotFound, ts.name, id)
	}
	if err := normalizeProps(ts.name, props); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if k := readOnlyViolation(props); k != "" {
		return fmt.Errorf("%w: property %s is read-only", ErrInvalid, k)
	}
	if owner, ok := ts.emailOwner(props["email"]); ok && owner != o.id {
		return &ConflictError{ExistingID: strconv.FormatInt(owner, 10)}
	}
	s.updateLocked(ts, o, props, userSource)
	return nil
}

// UserDelete archives an object as a HubSpot user would.
func (s *Server) UserDelete(objectType, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(objectType)
	o := ts.live(id)
	if o == nil {
		return fmt.Errorf("%w: %s %s", ErrNotFound, ts.name, id)
	}
	s.archiveLocked(ts, o, userSource)
	return nil
}

// UserMerge merges mergedID into primaryID as a HubSpot user would.
func (s *Server) UserMerge(objectType, primaryID, mergedID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(objectType)
	p, m := ts.live(primaryID), ts.live(mergedID)
	if p == nil || m == nil {
		return fmt.Errorf("%w: %s %s or %s", ErrNotFound, ts.name, primaryID, mergedID)
	}
	if p == m {
		return fmt.Errorf("%w: cannot merge an object into itself", ErrInvalid)
	}
	s.mergeLocked(ts, p, m, userSource)
	return nil
}

// Objects returns the non-archived objects of a type, sorted by id.
func (s *Server) Objects(objectType string) []Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(objectType)
	var out []Object
	for _, id := range ts.sortedIDs() {
		if o := ts.objs[id]; !o.archived {
			out = append(out, o.export())
		}
	}
	return out
}

// Object returns one object, archived or not; it does not follow merges
// (see Object.MergedInto).
func (s *Server) Object(objectType, id string) (Object, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := parseID(id)
	if !ok {
		return Object{}, false
	}
	o := s.storeLocked(objectType).objs[n]
	if o == nil {
		return Object{}, false
	}
	return o.export(), true
}

func (s *Server) objectTypesLocked() []string {
	return slices.Sorted(maps.Keys(s.types))
}
