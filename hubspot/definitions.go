package hubspot

import (
	"context"
	"net/http"
)

// SubscriptionDefinition is one subscription type of the portal (a
// communication preference an email address can be subscribed to).
type SubscriptionDefinition struct {
	ID          string
	Name        string
	Description string
	Purpose     string
	IsActive    bool
	// BusinessUnitID is the business unit (brand) the type belongs to; "0"
	// or "" is the default unit.
	BusinessUnitID string
}

// SubscriptionDefinitions lists the portal's subscription types (v3, GET
// /communication-preferences/v3/definitions). It needs the private app's
// communication_preferences.read scope.
func (c *Client) SubscriptionDefinitions(ctx context.Context) ([]SubscriptionDefinition, error) {
	var w struct {
		SubscriptionDefinitions []struct {
			ID             flexID `json:"id"`
			Name           string `json:"name"`
			Description    string `json:"description"`
			Purpose        string `json:"purpose"`
			IsActive       bool   `json:"isActive"`
			BusinessUnitID flexID `json:"businessUnitId"`
		} `json:"subscriptionDefinitions"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/communication-preferences/v3/definitions", nil, nil, &w); err != nil {
		return nil, err
	}
	out := make([]SubscriptionDefinition, len(w.SubscriptionDefinitions))
	for i, d := range w.SubscriptionDefinitions {
		out[i] = SubscriptionDefinition{
			ID: string(d.ID), Name: d.Name, Description: d.Description, Purpose: d.Purpose,
			IsActive: d.IsActive, BusinessUnitID: string(d.BusinessUnitID),
		}
	}
	return out, nil
}
