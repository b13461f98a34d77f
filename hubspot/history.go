package hubspot

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxHistoryBatchInputs is the most inputs a batch read with
// propertiesWithHistory should carry: HubSpot documents a lower limit for
// reads with history than for plain batch reads.
const MaxHistoryBatchInputs = 50

// PropertyVersion is one version of a property value, from a read with
// propertiesWithHistory.
type PropertyVersion struct {
	// Value is the property value of this version; HubSpot's null is "".
	Value string
	// Timestamp is when HubSpot wrote it (zero when unparsable).
	Timestamp time.Time
	// SourceType says who wrote it: CRM_UI, INTEGRATION, IMPORT, WORKFLOW, API…
	SourceType string
	// SourceID names the writer within SourceType: for INTEGRATION the app id
	// (bare or prefixed), for CRM_UI a user.
	SourceID string
	// UpdatedByUserID is the HubSpot user id, when HubSpot sends one.
	UpdatedByUserID string
}

// WrittenBy reports whether the version was written by the app with id
// appID (changeSource INTEGRATION or API with sourceId naming the app, bare
// or prefixed as "app:1000"). An empty appID matches nothing.
func (v PropertyVersion) WrittenBy(appID string) bool {
	if appID == "" {
		return false
	}
	switch strings.ToUpper(v.SourceType) {
	case "INTEGRATION", "API":
	default:
		return false
	}
	sid := v.SourceID
	if i := strings.LastIndexByte(sid, ':'); i >= 0 {
		sid = sid[i+1:]
	}
	return sid == appID
}

type wireVersion struct {
	Value           json.RawMessage `json:"value"`
	Timestamp       string          `json:"timestamp"`
	SourceType      string          `json:"sourceType"`
	SourceID        json.RawMessage `json:"sourceId"`
	UpdatedByUserID json.RawMessage `json:"updatedByUserId"`
}

// historyOf turns the wire history into versions, newest first whatever
// order HubSpot sent them in.
func historyOf(w map[string][]wireVersion) map[string][]PropertyVersion {
	out := make(map[string][]PropertyVersion, len(w))
	for k, vs := range w {
		list := make([]PropertyVersion, 0, len(vs))
		for _, v := range vs {
			list = append(list, PropertyVersion{
				Value: flexText(v.Value), Timestamp: parseTime(v.Timestamp), SourceType: v.SourceType,
				SourceID: flexText(v.SourceID), UpdatedByUserID: flexText(v.UpdatedByUserID),
			})
		}
		slices.SortStableFunc(list, func(a, b PropertyVersion) int { return b.Timestamp.Compare(a.Timestamp) })
		out[k] = list
	}
	return out
}

// BatchReadWithHistory is BatchRead by id that also asks for the history of
// the properties in history (propertiesWithHistory): each result's History
// then holds their versions, newest first. At most MaxHistoryBatchInputs ids.
func (c *Client) BatchReadWithHistory(ctx context.Context, t ObjectType, ids []string, properties, history []string) (*BatchResult, error) {
	if len(ids) > MaxHistoryBatchInputs {
		return nil, fmt.Errorf("%w: batch read with history got %d inputs; split it into chunks of %d", ErrBatchTooLarge, len(ids), MaxHistoryBatchInputs)
	}
	in := idInputs(ids)
	body := struct {
		Inputs                []idInput `json:"inputs"`
		Properties            []string  `json:"properties"`
		PropertiesWithHistory []string  `json:"propertiesWithHistory"`
	}{in, nonNilStrings(properties), nonNilStrings(history)}
	return c.read(ctx, t, len(ids), nil, body)
}

// ListLimitMax is the largest page List returns.
const ListLimitMax = 100

// ListPage is one page of List.
type ListPage struct {
	Results []Object
	// After is the cursor of the next page; "" on the last page.
	After string
}

// List reads one page of the live records of a type in id order (GET
// /crm/v3/objects/{type}), limit at most ListLimitMax, after the cursor of
// the previous page ("" for the first).
func (c *Client) List(ctx context.Context, t ObjectType, properties []string, after string, limit int) (*ListPage, error) {
	if err := checkType(t); err != nil {
		return nil, err
	}
	if limit < 1 || limit > ListLimitMax {
		return nil, fmt.Errorf("%w: list limit %d must be between 1 and %d", ErrInvalidArgument, limit, ListLimitMax)
	}
	q := url.Values{"limit": {strconv.Itoa(limit)}}
	if len(properties) > 0 {
		q.Set("properties", strings.Join(properties, ","))
	}
	if after != "" {
		q.Set("after", after)
	}
	var w struct {
		Results []Object `json:"results"`
		Paging  struct {
			Next struct {
				After json.RawMessage `json:"after"`
			} `json:"next"`
		} `json:"paging"`
	}
	if _, err := c.do(ctx, http.MethodGet, objectsPath(t), q, nil, &w); err != nil {
		return nil, err
	}
	return &ListPage{Results: w.Results, After: flexText(w.Paging.Next.After)}, nil
}
