package hubspotsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// apiResp is a handler's answer; serveAPI writes it (or drops it).
type apiResp struct {
	status      int
	body        any    // JSON-encoded unless nil
	raw         []byte // written as is with contentType when set
	contentType string
}

type apiFunc func(r *http.Request, body []byte) apiResp

type routeKind int

const (
	routeNormal routeKind = iota
	routeSearch
)

// errorBody is HubSpot's error JSON; 429s use ErrorType/PolicyName/GroupName
// instead of Category.
type errorBody struct {
	Status        string              `json:"status"`
	Message       string              `json:"message"`
	CorrelationID string              `json:"correlationId,omitempty"`
	Category      string              `json:"category,omitempty"`
	SubCategory   string              `json:"subCategory,omitempty"`
	Context       map[string][]string `json:"context,omitempty"`
	Errors        []errorDetail       `json:"errors,omitempty"`
	ErrorType     string              `json:"errorType,omitempty"`
	PolicyName    string              `json:"policyName,omitempty"`
	GroupName     string              `json:"groupName,omitempty"`
}

type errorDetail struct {
	Message     string              `json:"message"`
	Code        string              `json:"code,omitempty"`
	In          string              `json:"in,omitempty"`
	SubCategory string              `json:"subCategory,omitempty"`
	Context     map[string][]string `json:"context,omitempty"`
}

func errResp(status int, category, msg string) apiResp {
	return apiResp{status: status, body: &errorBody{Status: "error", Message: msg, Category: category}}
}

func validationErr(msg string) apiResp {
	return errResp(http.StatusBadRequest, "VALIDATION_ERROR", msg)
}

func notFoundErr(id string) apiResp {
	r := errResp(http.StatusNotFound, "OBJECT_NOT_FOUND", "Object not found.  objectId are usually numeric.")
	r.body.(*errorBody).Context = map[string][]string{"id": {id}}
	return r
}

func conflictErr(existing int64) apiResp {
	return errResp(http.StatusConflict, "CONFLICT", "Contact already exists. Existing ID: "+strconv.FormatInt(existing, 10))
}

func jsonErr(err error) apiResp {
	return validationErr("Invalid input JSON: " + err.Error())
}

func (s *Server) routes() {
	m := s.mux
	s.api("POST /crm/v3/objects/{type}", routeNormal, s.handleCreate)
	s.api("GET /crm/v3/objects/{type}", routeNormal, s.handleList)
	s.api("GET /crm/v3/objects/{type}/{id}", routeNormal, s.handleGet)
	s.api("PATCH /crm/v3/objects/{type}/{id}", routeNormal, s.handlePatch)
	s.api("DELETE /crm/v3/objects/{type}/{id}", routeNormal, s.handleDelete)
	s.api("POST /crm/v3/objects/{type}/batch/{action}", routeNormal, s.handleBatch)
	s.api("POST /crm/v3/objects/{type}/search", routeSearch, s.handleSearch)
	s.api("POST /crm/v3/objects/{type}/merge", routeNormal, s.handleMerge)

	s.api("GET /crm/v3/properties/{type}", routeNormal, s.handleListProperties)
	s.api("POST /crm/v3/properties/{type}", routeNormal, s.handleCreateProperty)

	s.api("GET /account-info/v3/details", routeNormal, s.handleAccountDetails)
	s.api("GET /account-info/v3/api-usage/daily/private-apps", routeNormal, s.handleDailyUsage)
	s.api("POST /communication-preferences/v4/statuses/{email}", routeNormal, s.handlePrefsV4Write)
	s.api("GET /communication-preferences/v4/statuses/{email}", routeNormal, s.handlePrefsV4Read)
	s.api("POST /communication-preferences/v4/statuses/{email}/unsubscribe-all", routeNormal, s.handlePrefsV4UnsubscribeAll)
	s.api("POST /communication-preferences/v3/subscribe", routeNormal, s.handlePrefsV3Subscribe)
	s.api("POST /communication-preferences/v3/unsubscribe", routeNormal, s.handlePrefsV3Unsubscribe)
	s.api("GET /communication-preferences/v3/status/email/{email}", routeNormal, s.handlePrefsV3Status)
	s.api("GET /communication-preferences/v3/definitions", routeNormal, s.handlePrefsV3Definitions)

	s.controlRoutes()
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		b := &errorBody{Status: "error", Message: "No route for " + r.Method + " " + r.URL.Path, CorrelationID: uuid.NewString(), Category: "OBJECT_NOT_FOUND"}
		writeJSON(w, http.StatusNotFound, b)
	})
}

// api registers an authenticated, rate-limited, fault-injected API route.
func (s *Server) api(pattern string, kind routeKind, h apiFunc) {
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		s.serveAPI(w, r, pattern, kind, h)
	})
}

func pathKey(pattern string, r *http.Request) string {
	k := strings.Replace(pattern, "{type}", r.PathValue("type"), 1)
	return strings.Replace(k, "{action}", r.PathValue("action"), 1)
}

type faultPlan struct {
	errStatus  int
	hang       time.Duration
	dropBefore bool
	dropAfter  bool
}

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, pattern string, kind routeKind, h apiFunc) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return // the client went away
	}
	s.mu.Lock()
	s.counters.Requests++
	s.counters.RequestsByPath[pathKey(pattern, r)]++
	s.mu.Unlock()

	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || tok != s.cfg.AccessToken {
		writeJSON(w, http.StatusUnauthorized, &errorBody{
			Status:        "error",
			Message:       "Authentication credentials not found. This API supports OAuth 2.0 authentication and you can find more details at https://developers.hubspot.com/docs/methods/auth/oauth-overview",
			CorrelationID: uuid.NewString(),
			Category:      "INVALID_AUTHENTICATION",
		})
		return
	}

	limited, headers := s.admit(kind)
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	if limited != nil {
		s.write(w, *limited)
		return
	}

	plan, latency := s.planFaults()
	if !s.pause(r, latency) || !s.pause(r, plan.hang) {
		// Closing (or the client left): answer nothing rather than an empty 200.
		dropConn(w)
		return
	}
	if plan.dropBefore {
		dropConn(w)
		return
	}
	if plan.errStatus != 0 {
		s.write(w, faultResp(plan.errStatus, s.cfg.AppID))
		return
	}
	resp := h(r, body)
	if plan.dropAfter {
		dropConn(w)
		return
	}
	s.write(w, resp)
}

// pause waits d, or less when the request or the server ends; it reports
// whether to go on.
func (s *Server) pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closeCh:
		return false
	}
}

func (s *Server) planFaults() (faultPlan, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults
	var p faultPlan
	if f.Latency > 0 {
		s.counters.FaultsInjected["latency"]++
	}
	if f.HangProbability > 0 && s.rng.Float64() < f.HangProbability {
		p.hang = f.HangDuration
		s.counters.FaultsInjected["hang"]++
	}
	if f.DropProbability > 0 && s.rng.Float64() < f.DropProbability {
		if s.rng.IntN(2) == 0 {
			p.dropBefore = true
		} else {
			p.dropAfter = true
		}
		s.counters.FaultsInjected["drop"]++
		return p, f.Latency
	}
	x := s.rng.Float64()
	for _, e := range []struct {
		p      float64
		status int
	}{{f.Error500, 500}, {f.Error502, 502}, {f.Error503, 503}, {f.Error423, 423}, {f.Error429, 429}} {
		if e.p > 0 && x < e.p {
			p.errStatus = e.status
			s.counters.FaultsInjected["error"+strconv.Itoa(e.status)]++
			break
		}
		x -= e.p
	}
	return p, f.Latency
}

func faultResp(status int, appID int64) apiResp {
	switch status {
	case 429:
		return apiResp{status: 429, body: tenSecondlyBody(appID)}
	case 502:
		return apiResp{status: 502, contentType: "text/html", raw: []byte("<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>\n")}
	case 503:
		return errResp(503, "SERVICE_UNAVAILABLE", "The service is temporarily unavailable. Please try again later.")
	case 423:
		return errResp(423, "LOCKED", "The resource is locked by another request. Retry after at least 2 seconds.")
	default:
		return errResp(status, "INTERNAL_ERROR", "internal error")
	}
}

func tenSecondlyBody(appID int64) *errorBody {
	return &errorBody{
		Status: "error", Message: "You have reached your ten_secondly_rolling limit.", ErrorType: "RATE_LIMIT",
		PolicyName: "TEN_SECONDLY_ROLLING", GroupName: fmt.Sprintf("publicapi:private-app:%d:ten-secondly", appID),
	}
}

// admit applies the rate limits. Refused requests are not counted anywhere.
func (s *Server) admit(kind routeKind) (*apiResp, map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	if day := now.In(s.zone).Format(time.DateOnly); day != s.dayKey {
		s.dayKey, s.dayCount = day, 0
	}
	s.window = prune(s.window, now.Add(-10*time.Second))
	s.searchWin = prune(s.searchWin, now.Add(-time.Second))
	headers := func() map[string]string {
		if kind == routeSearch {
			return nil
		}
		return map[string]string{
			"X-HubSpot-RateLimit-Interval-Milliseconds": "10000",
			"X-HubSpot-RateLimit-Max":                   strconv.Itoa(s.tenSecond),
			"X-HubSpot-RateLimit-Remaining":             strconv.Itoa(max(0, s.tenSecond-len(s.window))),
			"X-HubSpot-RateLimit-Daily":                 strconv.Itoa(s.daily),
			"X-HubSpot-RateLimit-Daily-Remaining":       strconv.Itoa(max(0, s.daily-s.dayCount)),
		}
	}
	refuse := func(b *errorBody) (*apiResp, map[string]string) {
		s.counters.RateLimited429[b.PolicyName]++
		return &apiResp{status: http.StatusTooManyRequests, body: b}, headers()
	}
	if s.dayCount >= s.daily {
		return refuse(&errorBody{
			Status: "error", Message: "You have reached your daily limit.", ErrorType: "RATE_LIMIT",
			PolicyName: "DAILY", GroupName: fmt.Sprintf("publicapi:private-app:%d:daily", s.cfg.PortalID),
		})
	}
	if kind == routeSearch {
		if len(s.searchWin) >= s.cfg.SearchPerSecond {
			return refuse(&errorBody{
				Status: "error", Message: "You have reached your secondly limit.", ErrorType: "RATE_LIMIT",
				PolicyName: "SECONDLY", GroupName: fmt.Sprintf("publicapi:crm-search:%d", s.cfg.AppID),
			})
		}
		s.searchWin = append(s.searchWin, now)
	} else {
		if len(s.window) >= s.tenSecond {
			return refuse(tenSecondlyBody(s.cfg.AppID))
		}
		s.window = append(s.window, now)
	}
	s.dayCount++
	return nil, headers()
}

// prune drops times at or before cutoff from the oldest-first slice.
func prune(ts []time.Time, cutoff time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(cutoff) {
		i++
	}
	if i == 0 {
		return ts
	}
	return append(ts[:0], ts[i:]...)
}

func (s *Server) write(w http.ResponseWriter, resp apiResp) {
	if eb, ok := resp.body.(*errorBody); ok && eb.CorrelationID == "" {
		eb.CorrelationID = uuid.NewString()
	}
	if resp.status == http.StatusConflict {
		s.mu.Lock()
		s.counters.Conflicts409++
		s.mu.Unlock()
	}
	if resp.raw != nil {
		w.Header().Set("Content-Type", resp.contentType)
		w.WriteHeader(resp.status)
		_, _ = w.Write(resp.raw)
		return
	}
	if resp.body == nil {
		w.WriteHeader(resp.status)
		return
	}
	writeJSON(w, resp.status, resp.body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// dropConn closes the connection without an answer.
func dropConn(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
