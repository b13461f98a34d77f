package hubspot

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// AccountDetails is what GET /account-info/v3/details says of the account.
type AccountDetails struct {
	PortalID int64 `json:"portalId"`
	// TimeZone is the account's time zone, e.g. "US/Eastern": HubSpot resets
	// the daily API limit at its midnight.
	TimeZone        string `json:"timeZone"`
	CompanyCurrency string `json:"companyCurrency"`
	UIDomain        string `json:"uiDomain"`
}

// AccountDetails reads the account's details.
func (c *Client) AccountDetails(ctx context.Context) (*AccountDetails, error) {
	var out AccountDetails
	if _, err := c.do(ctx, http.MethodGet, "/account-info/v3/details", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// AccountLocation is the account's time zone as a *time.Location: the zone
// at whose midnight HubSpot resets the daily API limit.
func (c *Client) AccountLocation(ctx context.Context) (*time.Location, error) {
	d, err := c.AccountDetails(ctx)
	if err != nil {
		return nil, err
	}
	if d.TimeZone == "" {
		return nil, fmt.Errorf("hubspot: GET /account-info/v3/details: no timeZone in the answer")
	}
	loc, err := time.LoadLocation(d.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("hubspot: the account's timeZone %q: %w", d.TimeZone, err)
	}
	return loc, nil
}

// DailyUsage is a private app's use of its daily API limit.
type DailyUsage struct {
	Name         string    `json:"name"`
	UsageLimit   int       `json:"usageLimit"`
	CurrentUsage int       `json:"currentUsage"`
	CollectedAt  time.Time `json:"collectedAt"`
	FetchStatus  string    `json:"fetchStatus"`
	// ResetsAt is the account's next midnight, when the count starts again.
	ResetsAt time.Time `json:"resetsAt"`
}

// DailyUsage reads the private apps' daily API usage
// (GET /account-info/v3/api-usage/daily/private-apps).
func (c *Client) DailyUsage(ctx context.Context) ([]DailyUsage, error) {
	var w struct {
		Results []DailyUsage `json:"results"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/account-info/v3/api-usage/daily/private-apps", nil, nil, &w); err != nil {
		return nil, err
	}
	return w.Results, nil
}
