package hubspot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Subscription status states (v4 statusState, v3 status in upper case).
const (
	StatusSubscribed   = "SUBSCRIBED"
	StatusUnsubscribed = "UNSUBSCRIBED"
	StatusNotSpecified = "NOT_SPECIFIED"
)

// ChannelEmail is the only communication channel the client uses.
const ChannelEmail = "EMAIL"

// SubscriptionStatusInput sets one subscription of one email address (v4).
type SubscriptionStatusInput struct {
	// SubscriptionID is the subscription type id (numeric in HubSpot).
	SubscriptionID string
	// StatusState is StatusSubscribed, StatusUnsubscribed or StatusNotSpecified.
	StatusState string
	// Channel is ChannelEmail when empty.
	Channel string
	// LegalBasis is e.g. "LEGITIMATE_INTEREST_CLIENT", "CONSENT_WITH_NOTICE"; optional.
	LegalBasis            string
	LegalBasisExplanation string
}

// SubscriptionStatus is one subscription's state for one email address,
// from either API version; fields the version does not send stay empty.
type SubscriptionStatus struct {
	SubscriptionID string
	// Status is SUBSCRIBED, UNSUBSCRIBED or NOT_SPECIFIED (upper-cased).
	Status                string
	Channel               string
	BusinessUnitID        string
	Source                string
	LegalBasis            string
	LegalBasisExplanation string
	// Name, Description and PreferenceGroupName come from v3 only.
	Name                string
	Description         string
	PreferenceGroupName string
	// Timestamp is when the status was set (v4 only); zero when absent.
	Timestamp time.Time
}

// wireStatus is the union of v4 PublicStatus and v3 PublicSubscriptionStatus.
type wireStatus struct {
	SubscriptionID        flexID `json:"subscriptionId"`
	ID                    flexID `json:"id"`
	Status                string `json:"status"`
	StatusState           string `json:"statusState"`
	Channel               string `json:"channel"`
	BusinessUnitID        flexID `json:"businessUnitId"`
	BrandID               flexID `json:"brandId"`
	Source                string `json:"source"`
	SourceOfStatus        string `json:"sourceOfStatus"`
	LegalBasis            string `json:"legalBasis"`
	LegalBasisExplanation string `json:"legalBasisExplanation"`
	Name                  string `json:"name"`
	Description           string `json:"description"`
	PreferenceGroupName   string `json:"preferenceGroupName"`
	Timestamp             string `json:"timestamp"`
}

func (w wireStatus) status() SubscriptionStatus {
	s := SubscriptionStatus{
		SubscriptionID:        string(w.SubscriptionID),
		Status:                strings.ToUpper(w.Status),
		Channel:               w.Channel,
		BusinessUnitID:        string(w.BusinessUnitID),
		Source:                w.Source,
		LegalBasis:            w.LegalBasis,
		LegalBasisExplanation: w.LegalBasisExplanation,
		Name:                  w.Name,
		Description:           w.Description,
		PreferenceGroupName:   w.PreferenceGroupName,
		Timestamp:             parseTime(w.Timestamp),
	}
	if s.SubscriptionID == "" {
		s.SubscriptionID = string(w.ID)
	}
	if s.Status == "" {
		s.Status = strings.ToUpper(w.StatusState)
	}
	if s.BusinessUnitID == "" {
		s.BusinessUnitID = string(w.BrandID)
	}
	if s.Source == "" {
		s.Source = w.SourceOfStatus
	}
	return s
}

func checkEmail(email string) error {
	if strings.TrimSpace(email) == "" {
		return fmt.Errorf("%w: empty email address", ErrInvalidArgument)
	}
	return nil
}

// SetSubscriptionStatus sets one subscription of email (v4,
// POST /communication-preferences/v4/statuses/{email}) and returns the
// resulting status.
func (c *Client) SetSubscriptionStatus(ctx context.Context, email string, in SubscriptionStatusInput) (*SubscriptionStatus, error) {
	if err := checkEmail(email); err != nil {
		return nil, err
	}
	if in.SubscriptionID == "" {
		return nil, fmt.Errorf("%w: SubscriptionStatusInput.SubscriptionID is empty", ErrInvalidArgument)
	}
	switch in.StatusState {
	case StatusSubscribed, StatusUnsubscribed, StatusNotSpecified:
	default:
		return nil, fmt.Errorf("%w: SubscriptionStatusInput.StatusState %q must be SUBSCRIBED, UNSUBSCRIBED or NOT_SPECIFIED", ErrInvalidArgument, in.StatusState)
	}
	body := struct {
		SubscriptionID        flexID `json:"subscriptionId"`
		StatusState           string `json:"statusState"`
		Channel               string `json:"channel"`
		LegalBasis            string `json:"legalBasis,omitempty"`
		LegalBasisExplanation string `json:"legalBasisExplanation,omitempty"`
	}{flexID(in.SubscriptionID), in.StatusState, in.Channel, in.LegalBasis, in.LegalBasisExplanation}
	if body.Channel == "" {
		body.Channel = ChannelEmail
	}
	var w wireStatus
	if _, err := c.do(ctx, http.MethodPost, "/communication-preferences/v4/statuses/"+escapePath(email), nil, body, &w); err != nil {
		return nil, err
	}
	s := w.status()
	return &s, nil
}

// GetSubscriptionStatuses reads every email subscription status of email in
// a business unit (v4, GET /communication-preferences/v4/statuses/{email});
// businessUnitID "" means HubSpot's default unit.
func (c *Client) GetSubscriptionStatuses(ctx context.Context, email string, businessUnitID string) ([]SubscriptionStatus, error) {
	if err := checkEmail(email); err != nil {
		return nil, err
	}
	q := url.Values{"channel": {ChannelEmail}}
	if businessUnitID != "" {
		q.Set("businessUnitId", businessUnitID)
	}
	var w struct {
		Results []wireStatus `json:"results"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/communication-preferences/v4/statuses/"+escapePath(email), q, nil, &w); err != nil {
		return nil, err
	}
	out := make([]SubscriptionStatus, len(w.Results))
	for i, r := range w.Results {
		out[i] = r.status()
	}
	return out, nil
}

// SubscribeInput subscribes or unsubscribes an email address (v3).
type SubscribeInput struct {
	EmailAddress          string
	SubscriptionID        string
	LegalBasis            string
	LegalBasisExplanation string
}

func (c *Client) subscribeV3(ctx context.Context, op string, in SubscribeInput) (*SubscriptionStatus, error) {
	if err := checkEmail(in.EmailAddress); err != nil {
		return nil, err
	}
	if in.SubscriptionID == "" {
		return nil, fmt.Errorf("%w: SubscribeInput.SubscriptionID is empty", ErrInvalidArgument)
	}
	body := struct {
		EmailAddress          string `json:"emailAddress"`
		SubscriptionID        string `json:"subscriptionId"`
		LegalBasis            string `json:"legalBasis,omitempty"`
		LegalBasisExplanation string `json:"legalBasisExplanation,omitempty"`
	}{in.EmailAddress, in.SubscriptionID, in.LegalBasis, in.LegalBasisExplanation}
	var w wireStatus
	if _, err := c.do(ctx, http.MethodPost, "/communication-preferences/v3/"+op, nil, body, &w); err != nil {
		return nil, err
	}
	s := w.status()
	return &s, nil
}

// Subscribe subscribes an address (v3, POST /communication-preferences/v3/subscribe).
// HubSpot answers 400 (KindValidation) when the address is already
// subscribed or has opted out of all email.
func (c *Client) Subscribe(ctx context.Context, in SubscribeInput) (*SubscriptionStatus, error) {
	return c.subscribeV3(ctx, "subscribe", in)
}

// Unsubscribe unsubscribes an address (v3, POST /communication-preferences/v3/unsubscribe).
// HubSpot answers 400 (KindValidation) when it is already unsubscribed.
func (c *Client) Unsubscribe(ctx context.Context, in SubscribeInput) (*SubscriptionStatus, error) {
	return c.subscribeV3(ctx, "unsubscribe", in)
}

// GetSubscriptionStatusV3 reads every subscription status of email (v3,
// GET /communication-preferences/v3/status/email/{email}).
func (c *Client) GetSubscriptionStatusV3(ctx context.Context, email string) ([]SubscriptionStatus, error) {
	if err := checkEmail(email); err != nil {
		return nil, err
	}
	var w struct {
		SubscriptionStatuses []wireStatus `json:"subscriptionStatuses"`
	}
	if _, err := c.do(ctx, http.MethodGet, "/communication-preferences/v3/status/email/"+escapePath(email), nil, nil, &w); err != nil {
		return nil, err
	}
	out := make([]SubscriptionStatus, len(w.SubscriptionStatuses))
	for i, r := range w.SubscriptionStatuses {
		out[i] = r.status()
	}
	return out, nil
}

var _ json.Unmarshaler = (*flexID)(nil)

// CommPrefsFailure is what a communication-preferences error means for the
// caller; HubSpot reports most of them as 400 VALIDATION_ERROR and tells
// them apart only by the message.
type CommPrefsFailure int

// The CommPrefsFailures.
const (
	// CommPrefsOther: not one of the cases below (e.g. transient, auth).
	CommPrefsOther CommPrefsFailure = iota
	// CommPrefsAlreadyInState: the address already has the requested status;
	// the change is done.
	CommPrefsAlreadyInState
	// CommPrefsOptedOut: the address has opted out of all email and cannot be
	// subscribed through the API; only the contact can opt back in.
	CommPrefsOptedOut
	// CommPrefsInvalidSubscription: the subscription id does not exist (a
	// mapping error).
	CommPrefsInvalidSubscription
	// CommPrefsContactUnknown: no contact has the address.
	CommPrefsContactUnknown
)

// CommPrefsFailureOf classifies an error of Subscribe, Unsubscribe or
// SetSubscriptionStatus.
func CommPrefsFailureOf(err error) CommPrefsFailure {
	var e *Error
	if !errors.As(err, &e) {
		return CommPrefsOther
	}
	msg := strings.ToLower(e.Message)
	switch {
	case e.StatusCode == http.StatusNotFound:
		if strings.Contains(msg, "subscription") && !strings.Contains(msg, "contact") {
			return CommPrefsInvalidSubscription
		}
		return CommPrefsContactUnknown
	case e.StatusCode != http.StatusBadRequest:
		return CommPrefsOther
	case strings.Contains(msg, "already subscribed"), strings.Contains(msg, "already unsubscribed"):
		return CommPrefsAlreadyInState
	case strings.Contains(msg, "opted out"), strings.Contains(msg, "unsubscribed from all"):
		return CommPrefsOptedOut
	case strings.Contains(msg, "subscription") && (strings.Contains(msg, "does not exist") || strings.Contains(msg, "invalid subscription")):
		return CommPrefsInvalidSubscription
	case strings.Contains(msg, "contact") && (strings.Contains(msg, "does not exist") || strings.Contains(msg, "not found")):
		return CommPrefsContactUnknown
	}
	return CommPrefsOther
}
