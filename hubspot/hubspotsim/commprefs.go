package hubspotsim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// subscriptionDef is one of the fixed subscription types of the simulated account.
type subscriptionDef struct {
	ID          int64
	Name        string
	Description string
	Purpose     string
}

var subscriptionDefs = []subscriptionDef{
	{1, "Marketing Information", "Marketing offers and updates.", "Marketing"},
	{2, "One to One", "One to one emails.", "Sales"},
	{3, "Customer Service Communication", "Updates about your support requests.", "Customer Service"},
}

func findDef(id int64) (subscriptionDef, bool) {
	for _, d := range subscriptionDefs {
		if d.ID == id {
			return d, true
		}
	}
	return subscriptionDef{}, false
}

// prefState is an email's status for one subscription; status is the v4
// vocabulary SUBSCRIBED / UNSUBSCRIBED (absent means NOT_SPECIFIED).
type prefState struct {
	status      string
	legalBasis  string
	explanation string
	at          time.Time
}

func (s *Server) setPrefLocked(email string, id int64, status, legalBasis, explanation string) *prefState {
	m := s.prefs[email]
	if m == nil {
		m = map[int64]*prefState{}
		s.prefs[email] = m
	}
	st := &prefState{status: status, legalBasis: legalBasis, explanation: explanation, at: s.cfg.Now()}
	m[id] = st
	return st
}

type v4Status struct {
	SubscriberIDString     string `json:"subscriberIdString"`
	SubscriptionID         int64  `json:"subscriptionId"`
	SubscriptionName       string `json:"subscriptionName"`
	Channel                string `json:"channel"`
	Status                 string `json:"status"`
	Source                 string `json:"source"`
	LegalBasis             string `json:"legalBasis,omitempty"`
	LegalBasisExplanation  string `json:"legalBasisExplanation,omitempty"`
	SetStatusSuccessReason string `json:"setStatusSuccessReason,omitempty"`
	Timestamp              string `json:"timestamp"`
	BusinessUnitID         int64  `json:"businessUnitId"`
}

func (s *Server) v4StatusLocked(email string, d subscriptionDef, reason string) v4Status {
	out := v4Status{SubscriberIDString: email, SubscriptionID: d.ID, SubscriptionName: d.Name, Channel: "EMAIL", Status: "NOT_SPECIFIED", Source: "Public API", SetStatusSuccessReason: reason}
	if st := s.prefs[email][d.ID]; st != nil {
		out.Status, out.LegalBasis, out.LegalBasisExplanation, out.Timestamp = st.status, st.legalBasis, st.explanation, fmtTime(st.at)
	} else {
		out.Timestamp = fmtTime(s.cfg.Now())
	}
	return out
}

func prefEmail(raw string) (string, *apiResp) {
	e := strings.ToLower(strings.TrimSpace(raw))
	if !validEmail(e) {
		r := validationErr("Invalid email address: " + raw)
		return "", &r
	}
	return e, nil
}

func businessUnitOK(v string) bool { return v == "" || v == "0" }

func (s *Server) handlePrefsV4Write(r *http.Request, body []byte) apiResp {
	email, bad := prefEmail(r.PathValue("email"))
	if bad != nil {
		return *bad
	}
	var in struct {
		SubscriptionID        json.Number `json:"subscriptionId"`
		StatusState           string      `json:"statusState"`
		Channel               string      `json:"channel"`
		LegalBasis            string      `json:"legalBasis"`
		LegalBasisExplanation string      `json:"legalBasisExplanation"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	if in.Channel != "EMAIL" {
		return validationErr(`channel must be "EMAIL"`)
	}
	id, err := in.SubscriptionID.Int64()
	if err != nil {
		return validationErr("subscriptionId must be a subscription definition id")
	}
	d, ok := findDef(id)
	if !ok {
		return errResp(http.StatusBadRequest, "VALIDATION_ERROR", fmt.Sprintf("Subscription %d does not exist", id))
	}
	if !businessUnitOK(r.URL.Query().Get("businessUnitId")) {
		return validationErr("unknown businessUnitId; the simulator has only business unit 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch in.StatusState {
	case "SUBSCRIBED", "UNSUBSCRIBED":
		s.setPrefLocked(email, id, in.StatusState, in.LegalBasis, in.LegalBasisExplanation)
	case "NOT_SPECIFIED":
		delete(s.prefs[email], id)
	default:
		return validationErr("statusState must be SUBSCRIBED, UNSUBSCRIBED or NOT_SPECIFIED")
	}
	return apiResp{status: http.StatusOK, body: s.v4StatusLocked(email, d, "REQUESTED_CHANGE_OCCURRED")}
}

func (s *Server) handlePrefsV4Read(r *http.Request, _ []byte) apiResp {
	email, bad := prefEmail(r.PathValue("email"))
	if bad != nil {
		return *bad
	}
	q := r.URL.Query()
	if q.Get("channel") != "EMAIL" {
		return validationErr(`query parameter channel=EMAIL is required`)
	}
	if !businessUnitOK(q.Get("businessUnitId")) {
		return validationErr("unknown businessUnitId; the simulator has only business unit 0")
	}
	now := fmtTime(s.cfg.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	results := []v4Status{}
	for _, d := range subscriptionDefs {
		results = append(results, s.v4StatusLocked(email, d, ""))
	}
	return apiResp{status: http.StatusOK, body: map[string]any{"status": "COMPLETE", "results": results, "startedAt": now, "completedAt": now}}
}

func (s *Server) handlePrefsV4UnsubscribeAll(r *http.Request, _ []byte) apiResp {
	email, bad := prefEmail(r.PathValue("email"))
	if bad != nil {
		return *bad
	}
	if r.URL.Query().Get("channel") != "EMAIL" {
		return validationErr(`query parameter channel=EMAIL is required`)
	}
	now := fmtTime(s.cfg.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	results := []v4Status{}
	s.optOutLocked(email)
	for _, d := range subscriptionDefs {
		results = append(results, s.v4StatusLocked(email, d, "REQUESTED_CHANGE_OCCURRED"))
	}
	return apiResp{status: http.StatusOK, body: map[string]any{"status": "COMPLETE", "results": results, "startedAt": now, "completedAt": now}}
}

type v3Status struct {
	ID                    string `json:"id"`
	Name                  string `json:"name"`
	Description           string `json:"description"`
	Status                string `json:"status"`
	SourceOfStatus        string `json:"sourceOfStatus"`
	LegalBasis            string `json:"legalBasis,omitempty"`
	LegalBasisExplanation string `json:"legalBasisExplanation,omitempty"`
	PreferenceGroupName   string `json:"preferenceGroupName,omitempty"`
}

func (s *Server) v3StatusLocked(email string, d subscriptionDef) v3Status {
	out := v3Status{ID: strconv.FormatInt(d.ID, 10), Name: d.Name, Description: d.Description, Status: "NOT_SUBSCRIBED", SourceOfStatus: "SUBSCRIPTION_STATUS"}
	if st := s.prefs[email][d.ID]; st != nil {
		if st.status == "SUBSCRIBED" {
			out.Status = "SUBSCRIBED"
		}
		out.LegalBasis, out.LegalBasisExplanation = st.legalBasis, st.explanation
	}
	return out
}

func (s *Server) prefsV3Change(body []byte, status string) apiResp {
	var in struct {
		EmailAddress          string      `json:"emailAddress"`
		SubscriptionID        json.Number `json:"subscriptionId"`
		LegalBasis            string      `json:"legalBasis"`
		LegalBasisExplanation string      `json:"legalBasisExplanation"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return jsonErr(err)
	}
	email, bad := prefEmail(in.EmailAddress)
	if bad != nil {
		return *bad
	}
	id, err := in.SubscriptionID.Int64()
	if err != nil {
		return validationErr("subscriptionId must be a subscription definition id")
	}
	d, ok := findDef(id)
	if !ok {
		return validationErr(fmt.Sprintf("Subscription %d does not exist", id))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.CommPrefsRequireContact {
		if _, ok := s.storeLocked("contacts").emailOwner(email); !ok {
			return errResp(http.StatusNotFound, "OBJECT_NOT_FOUND", fmt.Sprintf("Contact with email %s does not exist", email))
		}
	}
	current := "NOT_SPECIFIED"
	if st := s.prefs[email][id]; st != nil {
		current = st.status
	}
	switch {
	case status == "SUBSCRIBED" && s.optedOut[email]:
		return validationErr(fmt.Sprintf("%s has opted out of all email and cannot be subscribed through the API", email))
	case status == "SUBSCRIBED" && current == "SUBSCRIBED":
		return validationErr(fmt.Sprintf("%s is already subscribed to subscription %d", email, id))
	case status == "UNSUBSCRIBED" && (current == "UNSUBSCRIBED" || s.optedOut[email]):
		return validationErr(fmt.Sprintf("%s is already unsubscribed from subscription %d", email, id))
	}
	s.setPrefLocked(email, id, status, in.LegalBasis, in.LegalBasisExplanation)
	return apiResp{status: http.StatusOK, body: s.v3StatusLocked(email, d)}
}

// OptOutOfAllEmail opts email out of all email, as the contact would from a
// preferences page: every subscription reads UNSUBSCRIBED, and v3 subscribe
// answers 400 until OptBackIn.
func (s *Server) OptOutOfAllEmail(email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.optOutLocked(strings.ToLower(email))
}

func (s *Server) optOutLocked(email string) {
	if s.optedOut == nil {
		s.optedOut = map[string]bool{}
	}
	s.optedOut[email] = true
	for _, d := range subscriptionDefs {
		s.setPrefLocked(email, d.ID, "UNSUBSCRIBED", "", "")
	}
}

// OptBackIn undoes OptOutOfAllEmail (the contact resubscribed themselves).
func (s *Server) OptBackIn(email string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.optedOut, strings.ToLower(email))
}

func (s *Server) handlePrefsV3Subscribe(_ *http.Request, body []byte) apiResp {
	return s.prefsV3Change(body, "SUBSCRIBED")
}

func (s *Server) handlePrefsV3Unsubscribe(_ *http.Request, body []byte) apiResp {
	return s.prefsV3Change(body, "UNSUBSCRIBED")
}

func (s *Server) handlePrefsV3Status(r *http.Request, _ []byte) apiResp {
	email, bad := prefEmail(r.PathValue("email"))
	if bad != nil {
		return *bad
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	statuses := []v3Status{}
	for _, d := range subscriptionDefs {
		statuses = append(statuses, s.v3StatusLocked(email, d))
	}
	return apiResp{status: http.StatusOK, body: map[string]any{"recipient": email, "subscriptionStatuses": statuses}}
}

func (s *Server) handlePrefsV3Definitions(_ *http.Request, _ []byte) apiResp {
	created := fmtTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	defs := []map[string]any{}
	for i, d := range subscriptionDefs {
		defs = append(defs, map[string]any{
			"id": strconv.FormatInt(d.ID, 10), "name": d.Name, "description": d.Description, "purpose": d.Purpose,
			"communicationMethod": "Email", "isActive": true, "isDefault": i == 0, "isInternal": false,
			"createdAt": created, "updatedAt": created, "businessUnitId": 0,
		})
	}
	return apiResp{status: http.StatusOK, body: map[string]any{"subscriptionDefinitions": defs}}
}

// SubscriptionStatus returns an email's v4 status for a subscription id:
// SUBSCRIBED, UNSUBSCRIBED or NOT_SPECIFIED.
func (s *Server) SubscriptionStatus(email string, subscriptionID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.prefs[strings.ToLower(email)][subscriptionID]; st != nil {
		return st.status
	}
	return "NOT_SPECIFIED"
}
