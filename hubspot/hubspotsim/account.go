package hubspotsim

import (
	"net/http"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// zoneOf loads a validated time zone name.
func zoneOf(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err) // validated by Config.validate
	}
	return loc
}

// handleAccountDetails answers GET /account-info/v3/details, in HubSpot's
// shape: the portal id and the account's time zone, at whose midnight the
// daily limit resets.
func (s *Server) handleAccountDetails(_ *http.Request, _ []byte) apiResp {
	_, offset := s.cfg.Now().In(s.zone).Zone()
	return apiResp{status: http.StatusOK, body: map[string]any{
		"portalId": s.cfg.PortalID, "accountType": "STANDARD", "timeZone": s.cfg.TimeZone,
		"companyCurrency": "USD", "additionalCurrencies": []string{}, "utcOffset": utcOffset(offset),
		"utcOffsetMilliseconds": offset * 1000, "uiDomain": "app.hubspot.com", "dataHostingLocation": "na1",
	}}
}

// handleDailyUsage answers GET /account-info/v3/api-usage/daily/private-apps:
// the day's calls so far (this one included) and when the count resets.
func (s *Server) handleDailyUsage(_ *http.Request, _ []byte) apiResp {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	return apiResp{status: http.StatusOK, body: map[string]any{"results": []map[string]any{{
		"name": "private-apps-api-calls-daily", "usageLimit": s.daily, "currentUsage": s.dayCount,
		"collectedAt": now.UTC().Format(time.RFC3339Nano), "fetchStatus": "SUCCESS",
		"resetsAt": hubspot.NextMidnight(now, s.zone).UTC().Format(time.RFC3339),
	}}}}
}

// utcOffset formats an offset in seconds as HubSpot does, e.g. "-05:00".
func utcOffset(sec int) string {
	sign := '+'
	if sec < 0 {
		sign, sec = '-', -sec
	}
	return string(sign) + time.Time{}.Add(time.Duration(sec)*time.Second).Format("15:04")
}
