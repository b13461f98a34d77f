package hubspotsim

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// propMap decodes HubSpot property values: strings, and numbers and booleans
// as their JSON text; null clears.
type propMap map[string]string

// UnmarshalJSON implements json.Unmarshaler.
func (p *propMap) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m := make(propMap, len(raw))
	for k, v := range raw {
		switch {
		case k == "":
			return fmt.Errorf("property names must not be empty")
		case string(v) == "null":
			m[k] = ""
		case v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			m[k] = s
		case v[0] == '{' || v[0] == '[':
			return fmt.Errorf("property %q: value must be a string, number or boolean", k)
		default:
			m[k] = string(v)
		}
	}
	*p = m
	return nil
}

type objectJSON struct {
	ID         string             `json:"id"`
	Properties map[string]*string `json:"properties"`
	CreatedAt  string             `json:"createdAt"`
	UpdatedAt  string             `json:"updatedAt"`
	Archived   bool               `json:"archived"`
	ArchivedAt string             `json:"archivedAt,omitempty"`
	New        *bool              `json:"new,omitempty"`
	// History is propertiesWithHistory, set only when a read asks for it.
	History map[string][]versionJSON `json:"propertiesWithHistory,omitempty"`
}

var defaultProps = map[string][]string{
	"contacts":  {"createdate", "email", "firstname", "hs_object_id", "lastmodifieddate", "lastname"},
	"companies": {"createdate", "domain", "hs_lastmodifieddate", "hs_object_id", "name"},
	"deals":     {"amount", "closedate", "createdate", "dealname", "dealstage", "hs_lastmodifieddate", "hs_object_id", "pipeline"},
}

// render encodes o with the named properties (nil = every stored property).
func render(o *object, props []string) objectJSON {
	j := objectJSON{
		ID:         strconv.FormatInt(o.id, 10),
		Properties: map[string]*string{},
		CreatedAt:  fmtTime(o.createdAt),
		UpdatedAt:  fmtTime(o.updatedAt),
		Archived:   o.archived,
	}
	if o.archived {
		j.ArchivedAt = fmtTime(o.archivedAt)
	}
	if props == nil {
		for k, v := range o.props {
			j.Properties[k] = &v
		}
		return j
	}
	for _, k := range props {
		if v, ok := o.props[k]; ok {
			j.Properties[k] = &v
		} else {
			j.Properties[k] = nil
		}
	}
	return j
}

// readProps is the property list of a read: the requested names, or the
// type's defaults.
func readProps(objectType string, requested []string) []string {
	var out []string
	for _, p := range requested {
		for name := range strings.SplitSeq(p, ",") {
			if name = strings.TrimSpace(name); name != "" && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	if len(out) > 0 {
		return out
	}
	if d, ok := defaultProps[objectType]; ok {
		return d
	}
	return []string{"createdate", "hs_lastmodifieddate", "hs_object_id"}
}

func (s *Server) handleCreate(r *http.Request, body []byte) apiResp {
	var in struct {
		Properties   propMap         `json:"properties"`
		Associations json.RawMessage `json:"associations"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	props := map[string]string(in.Properties)
	if props == nil {
		props = map[string]string{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	if bad := s.checkPropsLocked(ts, props, 0); bad != nil {
		return *bad
	}
	o := s.createLocked(ts, props, s.apiSource())
	return apiResp{status: http.StatusCreated, body: render(o, nil)}
}

// checkPropsLocked validates and normalises props for a write to object
// self (0 for a create): read-only names, email syntax and uniqueness.
func (s *Server) checkPropsLocked(ts *typeStore, props map[string]string, self int64) *apiResp {
	if k := readOnlyViolation(props); k != "" {
		r := validationErr("Property values were not valid: " + k + " is a read-only property")
		r.body.(*errorBody).Errors = []errorDetail{{Message: k + " is a read-only property; its value cannot be set.", Code: "READ_ONLY_VALUE", Context: map[string][]string{"propertyName": {k}}}}
		return &r
	}
	if err := normalizeProps(ts.name, props); err != nil {
		r := validationErr("Property values were not valid: " + err.Error())
		r.body.(*errorBody).Errors = []errorDetail{{Message: err.Error(), Code: "INVALID_EMAIL", Context: map[string][]string{"propertyName": {"email"}}}}
		return &r
	}
	if owner, ok := ts.emailOwner(props["email"]); ok && owner != self {
		r := conflictErr(owner)
		return &r
	}
	return nil
}

func (s *Server) handleList(r *http.Request, _ []byte) apiResp {
	q := r.URL.Query()
	limit := 10
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return validationErr("limit must be between 1 and 100")
		}
		limit = n
	}
	after := int64(0)
	if v := q.Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return validationErr("after must be a paging cursor returned by a previous page")
		}
		after = n
	}
	archived := q.Get("archived") == "true"
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	props := readProps(ts.name, q["properties"])
	results := []objectJSON{}
	var next int64
	for _, id := range ts.sortedIDs() {
		o := ts.objs[id]
		if id <= after || o.archived != archived {
			continue
		}
		if len(results) == limit {
			next = results[len(results)-1].idNum()
			break
		}
		results = append(results, render(o, props))
	}
	out := map[string]any{"results": results}
	if next != 0 {
		n := strconv.FormatInt(next, 10)
		out["paging"] = map[string]any{"next": map[string]string{"after": n, "link": "?after=" + n}}
	}
	return apiResp{status: http.StatusOK, body: out}
}

func (j objectJSON) idNum() int64 {
	n, _ := strconv.ParseInt(j.ID, 10, 64)
	return n
}

// lookupLocked finds the target of a single-object call by id or idProperty.
func (s *Server) lookupLocked(ts *typeStore, id, idProperty string, read, archived bool) (*object, *apiResp) {
	switch idProperty {
	case "":
		if read {
			return ts.readable(id, archived), nil
		}
		return ts.live(id), nil
	case "hs_object_id":
		r := validationErr("hs_object_id is not a valid idProperty; leave idProperty out to address objects by id")
		return nil, &r
	}
	return ts.findByProp(idProperty, id), nil
}

func (s *Server) handleGet(r *http.Request, _ []byte) apiResp {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	o, bad := s.lookupLocked(ts, r.PathValue("id"), q.Get("idProperty"), true, q.Get("archived") == "true")
	if bad != nil {
		return *bad
	}
	if o == nil {
		return notFoundErr(r.PathValue("id"))
	}
	return apiResp{status: http.StatusOK, body: render(o, readProps(ts.name, q["properties"]))}
}

func (s *Server) handlePatch(r *http.Request, body []byte) apiResp {
	var in struct {
		Properties propMap `json:"properties"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	o, bad := s.lookupLocked(ts, r.PathValue("id"), r.URL.Query().Get("idProperty"), false, false)
	if bad != nil {
		return *bad
	}
	if o == nil {
		return notFoundErr(r.PathValue("id"))
	}
	props := map[string]string(in.Properties)
	if bad := s.checkPropsLocked(ts, props, o.id); bad != nil {
		return *bad
	}
	s.updateLocked(ts, o, props, s.apiSource())
	return apiResp{status: http.StatusOK, body: render(o, nil)}
}

func (s *Server) handleDelete(r *http.Request, _ []byte) apiResp {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	o := ts.live(r.PathValue("id"))
	if o == nil {
		return notFoundErr(r.PathValue("id"))
	}
	s.archiveLocked(ts, o, s.apiSource())
	return apiResp{status: http.StatusNoContent}
}

func (s *Server) handleMerge(r *http.Request, body []byte) apiResp {
	var in struct {
		PrimaryObjectID string `json:"primaryObjectId"`
		ObjectIDToMerge string `json:"objectIdToMerge"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	if in.PrimaryObjectID == "" || in.ObjectIDToMerge == "" {
		return validationErr("primaryObjectId and objectIdToMerge are required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	p, m := ts.live(in.PrimaryObjectID), ts.live(in.ObjectIDToMerge)
	if p == nil {
		return notFoundErr(in.PrimaryObjectID)
	}
	if m == nil {
		return notFoundErr(in.ObjectIDToMerge)
	}
	if p == m {
		return validationErr("Cannot merge an object with itself")
	}
	s.mergeLocked(ts, p, m, s.apiSource())
	return apiResp{status: http.StatusOK, body: render(p, nil)}
}

// batchInput is one input of any batch call.
type batchInput struct {
	ID                 string  `json:"id"`
	IDProperty         string  `json:"idProperty"`
	ObjectWriteTraceID string  `json:"objectWriteTraceId"`
	Properties         propMap `json:"properties"`
}

type batchResult struct {
	Status      string       `json:"status"`
	Results     []objectJSON `json:"results"`
	NumErrors   int          `json:"numErrors,omitempty"`
	Errors      []errorBody  `json:"errors,omitempty"`
	RequestedAt string       `json:"requestedAt,omitempty"`
	StartedAt   string       `json:"startedAt"`
	CompletedAt string       `json:"completedAt"`
}

// inputError is a per-input error entry of a 207 answer.
func inputError(category, msg string, in batchInput, ctx map[string][]string) errorBody {
	if ctx == nil {
		ctx = map[string][]string{}
	}
	if in.ObjectWriteTraceID != "" {
		ctx["objectWriteTraceId"] = []string{in.ObjectWriteTraceID}
	}
	if len(ctx) == 0 {
		ctx = nil
	}
	return errorBody{Status: "error", Category: category, Message: msg, Context: ctx}
}

func (s *Server) handleBatch(r *http.Request, body []byte) apiResp {
	var in struct {
		Inputs     []batchInput `json:"inputs"`
		Properties []string     `json:"properties"`
		IDProperty string       `json:"idProperty"`
		// History names the properties whose versions a read returns.
		History []string `json:"propertiesWithHistory"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	if in.Inputs == nil {
		return validationErr("inputs is required")
	}
	if len(in.Inputs) > BatchInputsMax {
		r := validationErr(fmt.Sprintf("Batch input limit exceeded: %d inputs were given, at most %d are allowed", len(in.Inputs), BatchInputsMax))
		r.body.(*errorBody).Context = map[string][]string{"inputs": {strconv.Itoa(len(in.Inputs))}}
		return r
	}
	started := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.storeLocked(r.PathValue("type"))
	var res batchResult
	var status int
	var bad *apiResp
	action := r.PathValue("action")
	if action != "read" {
		s.counters.BatchWrites++
		s.counters.BatchWriteInputs += int64(len(in.Inputs))
	}
	switch action {
	case "create":
		res, status, bad = s.batchCreateLocked(ts, in.Inputs)
	case "read":
		res, status, bad = s.batchReadLocked(ts, in.Inputs, in.IDProperty, in.Properties, r.URL.Query().Get("archived") == "true")
		withHistory(ts, res.Results, in.History)
	case "update":
		res, status, bad = s.batchUpdateLocked(ts, in.Inputs)
	case "upsert":
		res, status, bad = s.batchUpsertLocked(ts, in.Inputs)
	case "archive":
		for _, bi := range in.Inputs {
			if o := ts.live(bi.ID); o != nil {
				s.archiveLocked(ts, o, s.apiSource())
			}
		}
		return apiResp{status: http.StatusNoContent}
	default:
		return errResp(http.StatusNotFound, "OBJECT_NOT_FOUND", "Unknown batch action "+strconv.Quote(action))
	}
	if bad != nil {
		return *bad
	}
	if res.Results == nil {
		res.Results = []objectJSON{}
	}
	res.Status = "COMPLETE"
	res.StartedAt = fmtTime(started)
	res.CompletedAt = fmtTime(s.cfg.Now())
	if len(res.Errors) > 0 {
		res.NumErrors = len(res.Errors)
		res.RequestedAt = res.StartedAt
		status = http.StatusMultiStatus
	}
	return apiResp{status: status, body: res}
}

// partialFaultLocked decides whether the PartialFailure fault fails an input.
func (s *Server) partialFaultLocked(in batchInput) (errorBody, bool) {
	if s.faults.PartialFailure <= 0 || s.rng.Float64() >= s.faults.PartialFailure {
		return errorBody{}, false
	}
	s.counters.FaultsInjected["partialFailure"]++
	return inputError("VALIDATION_ERROR", "Property values were not valid (injected partial failure)", in, nil), true
}

// allFailed turns a batch in which every input failed into a plain error
// answer, as HubSpot does when nothing succeeded.
func allFailed(errs []errorBody) *apiResp {
	e := errs[0]
	status := http.StatusBadRequest
	switch e.Category {
	case "OBJECT_NOT_FOUND":
		status = http.StatusNotFound
	case "CONFLICT":
		status = http.StatusConflict
	}
	e.Errors = nil
	if len(errs) > 1 {
		for _, x := range errs {
			e.Errors = append(e.Errors, errorDetail{Message: x.Message, Context: x.Context})
		}
	}
	return &apiResp{status: status, body: &e}
}

func (s *Server) batchCreateLocked(ts *typeStore, inputs []batchInput) (batchResult, int, *apiResp) {
	seen := map[string]bool{}
	for i := range inputs {
		if inputs[i].Properties == nil {
			inputs[i].Properties = propMap{}
		}
		props := map[string]string(inputs[i].Properties)
		if bad := s.checkPropsLocked(ts, props, 0); bad != nil {
			// HubSpot fails the whole batch and reports only the first problem.
			return batchResult{}, 0, bad
		}
		if e := props["email"]; e != "" && ts.name == "contacts" {
			if seen[e] {
				r := validationErr("Duplicate emails found in batch input: " + e)
				r.body.(*errorBody).Context = map[string][]string{"email": {e}}
				return batchResult{}, 0, &r
			}
			seen[e] = true
		}
	}
	var res batchResult
	for _, bi := range inputs {
		if e, failed := s.partialFaultLocked(bi); failed {
			res.Errors = append(res.Errors, e)
			continue
		}
		o := s.createLocked(ts, bi.Properties, s.apiSource())
		res.Results = append(res.Results, render(o, nil))
	}
	if len(res.Results) == 0 {
		return res, 0, allFailed(res.Errors)
	}
	return res, http.StatusCreated, nil
}

func (s *Server) batchReadLocked(ts *typeStore, inputs []batchInput, idProperty string, props []string, archived bool) (batchResult, int, *apiResp) {
	if idProperty == "hs_object_id" {
		r := validationErr("hs_object_id is not a valid idProperty; leave idProperty out to read by id")
		return batchResult{}, 0, &r
	}
	names := readProps(ts.name, props)
	var res batchResult
	var missing []string
	done := map[int64]bool{}
	for _, bi := range inputs {
		var o *object
		if idProperty == "" {
			o = ts.readable(bi.ID, archived)
		} else {
			o = ts.findByProp(idProperty, bi.ID)
		}
		if o == nil {
			missing = append(missing, bi.ID)
			continue
		}
		if !done[o.id] {
			done[o.id] = true
			res.Results = append(res.Results, render(o, names))
		}
	}
	if len(missing) > 0 {
		res.Errors = append(res.Errors, errorBody{
			Status: "error", Category: "OBJECT_NOT_FOUND",
			Message: fmt.Sprintf("Could not get some %s objects, they may be deleted or not exist. Check that ids are valid.", strings.ToUpper(singular(ts.name))),
			Context: map[string][]string{"ids": missing},
		})
		if len(res.Results) == 0 {
			return res, 0, allFailed(res.Errors)
		}
	}
	return res, http.StatusOK, nil
}

func (s *Server) batchUpdateLocked(ts *typeStore, inputs []batchInput) (batchResult, int, *apiResp) {
	seen := map[string]bool{}
	for _, bi := range inputs {
		if bi.IDProperty == "hs_object_id" {
			r := validationErr("hs_object_id is not a valid idProperty; leave idProperty out to update by id")
			return batchResult{}, 0, &r
		}
		key := bi.IDProperty + "\x00" + strings.ToLower(bi.ID)
		if seen[key] {
			r := validationErr("Duplicate IDs found in batch input: " + bi.ID)
			r.body.(*errorBody).Context = map[string][]string{"ids": {bi.ID}}
			return batchResult{}, 0, &r
		}
		seen[key] = true
		if k := readOnlyViolation(bi.Properties); k != "" {
			r := validationErr("Property values were not valid: " + k + " is a read-only property")
			return batchResult{}, 0, &r
		}
	}
	var res batchResult
	for _, bi := range inputs {
		var o *object
		if bi.IDProperty == "" {
			o = ts.live(bi.ID)
		} else {
			o = ts.findByProp(bi.IDProperty, bi.ID)
		}
		if o == nil {
			res.Errors = append(res.Errors, inputError("OBJECT_NOT_FOUND", "Object not found. objectId: "+bi.ID, bi, map[string][]string{"ids": {bi.ID}}))
			continue
		}
		if e, failed := s.partialFaultLocked(bi); failed {
			res.Errors = append(res.Errors, e)
			continue
		}
		props := maps.Clone(map[string]string(bi.Properties))
		if props == nil {
			props = map[string]string{}
		}
		if bad := s.checkPropsLocked(ts, props, o.id); bad != nil {
			eb := bad.body.(*errorBody)
			res.Errors = append(res.Errors, inputError(eb.Category, eb.Message, bi, nil))
			continue
		}
		s.updateLocked(ts, o, props, s.apiSource())
		res.Results = append(res.Results, render(o, nil))
	}
	if len(res.Results) == 0 {
		return res, 0, allFailed(res.Errors)
	}
	return res, http.StatusOK, nil
}

func (s *Server) batchUpsertLocked(ts *typeStore, inputs []batchInput) (batchResult, int, *apiResp) {
	seen := map[string]bool{}
	for _, bi := range inputs {
		switch bi.IDProperty {
		case "":
			r := validationErr("idProperty is required for upsert; name a unique property such as email")
			return batchResult{}, 0, &r
		case "hs_object_id":
			r := validationErr("hs_object_id is not a valid idProperty for upsert; use a unique property such as email")
			return batchResult{}, 0, &r
		}
		if bi.ID == "" {
			r := validationErr("every upsert input needs an id (the value of idProperty)")
			return batchResult{}, 0, &r
		}
		key := bi.IDProperty + "\x00" + strings.ToLower(bi.ID)
		if seen[key] {
			r := validationErr("Duplicate IDs found in batch input: " + bi.ID)
			r.body.(*errorBody).Context = map[string][]string{"ids": {bi.ID}}
			return batchResult{}, 0, &r
		}
		seen[key] = true
		if k := readOnlyViolation(bi.Properties); k != "" {
			r := validationErr("Property values were not valid: " + k + " is a read-only property")
			return batchResult{}, 0, &r
		}
	}
	var res batchResult
	for _, bi := range inputs {
		if e, failed := s.partialFaultLocked(bi); failed {
			res.Errors = append(res.Errors, e)
			continue
		}
		props := maps.Clone(map[string]string(bi.Properties))
		if props == nil {
			props = map[string]string{}
		}
		o := ts.findByProp(bi.IDProperty, bi.ID)
		if o == nil {
			if _, set := props[bi.IDProperty]; !set {
				props[bi.IDProperty] = bi.ID
			}
		}
		self := int64(0)
		if o != nil {
			self = o.id
		}
		if bad := s.checkPropsLocked(ts, props, self); bad != nil {
			eb := bad.body.(*errorBody)
			res.Errors = append(res.Errors, inputError(eb.Category, eb.Message, bi, nil))
			continue
		}
		created := o == nil
		if created {
			o = s.createLocked(ts, props, s.apiSource())
		} else {
			s.updateLocked(ts, o, props, s.apiSource())
		}
		j := render(o, nil)
		j.New = &created
		res.Results = append(res.Results, j)
	}
	if len(res.Results) == 0 {
		return res, 0, allFailed(res.Errors)
	}
	return res, http.StatusOK, nil
}
