package hubspot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hubsync/hubsync/internal/testwait"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorded is one request the test server saw.
type recorded struct {
	Method, Path, RawQuery, Auth, ContentType, UserAgent string
	Body                                                 []byte
}

// testServer answers every request with the scripted reply and records it.
type testServer struct {
	mu      sync.Mutex
	reqs    []recorded
	status  int
	header  http.Header
	body    string
	handler http.HandlerFunc // overrides the scripted reply when set
}

func (s *testServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, recorded{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), body})
	status, header, respBody, h := s.status, s.header, s.body, s.handler
	s.mu.Unlock()
	if h != nil {
		h(w, r)
		return
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(cmpOrInt(status, 200))
	io.WriteString(w, respBody)
}

func (s *testServer) requests() []recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]recorded(nil), s.reqs...)
}

func (s *testServer) reply(status int, header http.Header, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.header, s.body = status, header, body
}

func cmpOrInt(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

type bundle struct {
	client *Client
	srv    *testServer
	url    string
}

func setup(t *testing.T, cfg Config) *bundle {
	t.Helper()
	ts := &testServer{}
	hs := httptest.NewServer(ts)
	t.Cleanup(hs.Close)
	cfg.BaseURL = hs.URL
	if cfg.AccessToken == "" {
		cfg.AccessToken = "pat-test-token"
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{client: c, srv: ts, url: hs.URL}
}

// jsonEqual compares two JSON documents structurally.
func jsonEqual(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("request body is not JSON: %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request body\n got %s\nwant %s", got, want)
	}
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if _, err := NewClient(Config{}); err == nil || !strings.Contains(err.Error(), "Config.AccessToken") {
		t.Errorf("empty token: %v", err)
	}
	if _, err := NewClient(Config{AccessToken: "x", Timeout: -1}); err == nil || !strings.Contains(err.Error(), "Config.Timeout") {
		t.Errorf("negative timeout: %v", err)
	}
	if _, err := NewClient(Config{AccessToken: "x", BaseURL: "api.hubapi.com"}); err == nil || !strings.Contains(err.Error(), "Config.BaseURL") {
		t.Errorf("relative base url: %v", err)
	}
	c, err := NewClient(Config{AccessToken: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if c.baseURL != BaseURLDefault || c.timeout != TimeoutDefault || c.userAgent != UserAgentDefault || c.httpClient.Timeout != TimeoutDefault {
		t.Errorf("defaults not applied: %+v", c)
	}
}

const objJSON = `{"id":"101","properties":{"email":"a@b.com","firstname":null,"hs_object_id":"101"},"createdAt":"2024-01-02T03:04:05.678Z","updatedAt":"2024-02-03T04:05:06Z","archived":false}`

func checkObj(t *testing.T, o *Object) {
	t.Helper()
	if o == nil || o.ID != "101" || o.Properties["email"] != "a@b.com" || o.Properties["firstname"] != "" {
		t.Fatalf("object parsed wrong: %+v", o)
	}
	if _, ok := o.Properties["firstname"]; !ok {
		t.Errorf("null property dropped instead of kept as empty")
	}
	if !o.CreatedAt.Equal(time.Date(2024, 1, 2, 3, 4, 5, 678e6, time.UTC)) || !o.UpdatedAt.Equal(time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC)) {
		t.Errorf("timestamps parsed wrong: %v %v", o.CreatedAt, o.UpdatedAt)
	}
}

func TestRequestShapes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name       string
		status     int
		respBody   string
		call       func(t *testing.T, c *Client)
		wantMethod string
		wantPath   string
		wantQuery  string
		wantBody   string // "" means no body
	}{
		{
			name: "BatchCreate", status: 201,
			respBody: `{"status":"COMPLETE","results":[` + objJSON + `],"requestedAt":"x","startedAt":"y","completedAt":"z"}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.BatchCreate(ctx, Contacts, []CreateInput{{Properties: map[string]string{"email": "a@b.com"}, ObjectWriteTraceID: "t1"}, {}})
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != "COMPLETE" || r.Multi || len(r.Results) != 1 || len(r.Errors) != 0 {
					t.Errorf("result: %+v", r)
				}
				if len(r.Results) == 0 {
					t.Fatal("no result to check")
				}
				checkObj(t, &r.Results[0])
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/contacts/batch/create",
			wantBody: `{"inputs":[{"properties":{"email":"a@b.com"},"objectWriteTraceId":"t1"},{"properties":{}}]}`,
		},
		{
			name: "BatchRead", status: 200, respBody: `{"status":"COMPLETE","results":[` + objJSON + `]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.BatchRead(ctx, Companies, []string{"a@b.com", "c@d.com"}, []string{"email", "name"}, "email")
				if err != nil {
					t.Fatal(err)
				}
				checkObj(t, r.ResultByID("101"))
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/companies/batch/read",
			wantBody: `{"inputs":[{"id":"a@b.com"},{"id":"c@d.com"}],"properties":["email","name"],"idProperty":"email"}`,
		},
		{
			name: "BatchRead nothing found", status: 404,
			respBody: `{"status":"error","message":"Could not get some CONTACT objects, they may be deleted or not exist. Check that ids are valid.","category":"OBJECT_NOT_FOUND","context":{"ids":["1","2"]}}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.BatchRead(ctx, Contacts, []string{"1", "2"}, nil, "")
				if err != nil {
					t.Fatalf("a read that found nothing: %v; want a result without objects", err)
				}
				if len(r.Results) != 0 || !r.Multi || len(r.Errors) != 1 || r.Errors[0].Kind() != KindNotFound || !slices.Equal(r.Errors[0].Context["ids"], []string{"1", "2"}) {
					t.Fatalf("result %+v; want no objects and one not-found error naming both ids", r)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/contacts/batch/read",
			wantBody: `{"inputs":[{"id":"1"},{"id":"2"}],"properties":[]}`,
		},
		{
			name: "BatchRead 404 of another kind", status: 404,
			respBody: `{"status":"error","message":"Unable to infer object type from: 2-999","category":"OBJECT_NOT_FOUND_TYPE"}`,
			call: func(t *testing.T, c *Client) {
				if _, err := c.BatchRead(ctx, "2-999", []string{"1"}, nil, ""); KindOf(err) != KindNotFound {
					t.Fatalf("err = %v; want the 404 as a failed call", err)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/2-999/batch/read",
			wantBody: `{"inputs":[{"id":"1"}],"properties":[]}`,
		},
		{
			name: "BatchRead no properties", status: 200, respBody: `{"status":"COMPLETE","results":[]}`,
			call: func(t *testing.T, c *Client) {
				if _, err := c.BatchRead(ctx, "2-123456", []string{"1"}, nil, ""); err != nil {
					t.Fatal(err)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/2-123456/batch/read",
			wantBody: `{"inputs":[{"id":"1"}],"properties":[]}`,
		},
		{
			name: "BatchUpdate", status: 200, respBody: `{"status":"COMPLETE","results":[` + objJSON + `]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.BatchUpdate(ctx, Deals, []UpdateInput{{ID: "101", Properties: map[string]string{"amount": "5"}}, {ID: "x@y.z", IDProperty: "email", Properties: map[string]string{"a": ""}, ObjectWriteTraceID: "t2"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(r.Results) != 1 {
					t.Fatalf("%d results, want the 1 in the response: %+v", len(r.Results), r)
				}
				checkObj(t, &r.Results[0])
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/deals/batch/update",
			wantBody: `{"inputs":[{"id":"101","properties":{"amount":"5"}},{"id":"x@y.z","idProperty":"email","properties":{"a":""},"objectWriteTraceId":"t2"}]}`,
		},
		{
			name: "BatchUpsert", status: 200,
			respBody: `{"status":"COMPLETE","results":[{"id":"7","new":true,"properties":{"email":"a@b.com"}},{"id":"8","new":false,"properties":{}}]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.BatchUpsert(ctx, Contacts, []UpsertInput{{ID: "a@b.com", IDProperty: "email", Properties: map[string]string{"firstname": "A"}, ObjectWriteTraceID: "t3"}})
				if err != nil {
					t.Fatal(err)
				}
				if !r.ResultByID("7").New || r.ResultByID("8").New {
					t.Errorf("new flag: %+v", r.Results)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/contacts/batch/upsert",
			wantBody: `{"inputs":[{"id":"a@b.com","idProperty":"email","properties":{"firstname":"A"},"objectWriteTraceId":"t3"}]}`,
		},
		{
			name: "BatchArchive", status: 204,
			call: func(t *testing.T, c *Client) {
				if err := c.BatchArchive(ctx, "p_cars", []string{"1", "2"}); err != nil {
					t.Fatal(err)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/p_cars/batch/archive",
			wantBody: `{"inputs":[{"id":"1"},{"id":"2"}]}`,
		},
		{
			name: "Get", status: 200, respBody: objJSON,
			call: func(t *testing.T, c *Client) {
				o, err := c.Get(ctx, Contacts, "101", []string{"email", "firstname"})
				if err != nil {
					t.Fatal(err)
				}
				checkObj(t, o)
			},
			wantMethod: "GET", wantPath: "/crm/v3/objects/contacts/101", wantQuery: "properties=email%2Cfirstname",
		},
		{
			name: "Get escapes id", status: 200, respBody: objJSON,
			call: func(t *testing.T, c *Client) {
				if _, err := c.Get(ctx, Contacts, "a/b c", nil); err != nil {
					t.Fatal(err)
				}
			},
			wantMethod: "GET", wantPath: "/crm/v3/objects/contacts/a%2Fb%20c",
		},
		{
			name: "Update", status: 200, respBody: objJSON,
			call: func(t *testing.T, c *Client) {
				o, err := c.Update(ctx, Contacts, "101", map[string]string{"firstname": "B"})
				if err != nil {
					t.Fatal(err)
				}
				checkObj(t, o)
			},
			wantMethod: "PATCH", wantPath: "/crm/v3/objects/contacts/101",
			wantBody: `{"properties":{"firstname":"B"}}`,
		},
		{
			name: "Archive", status: 204,
			call: func(t *testing.T, c *Client) {
				if err := c.Archive(ctx, Companies, "55"); err != nil {
					t.Fatal(err)
				}
			},
			wantMethod: "DELETE", wantPath: "/crm/v3/objects/companies/55",
		},
		{
			name: "Search", status: 200,
			respBody: `{"total":250,"results":[` + objJSON + `],"paging":{"next":{"after":"200","link":"?after=200"}}}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.Search(ctx, Contacts, SearchRequest{
					FilterGroups: []FilterGroup{{Filters: []Filter{{PropertyName: "email", Operator: "EQ", Value: "a@b.com"}}}},
					Sorts:        []Sort{{PropertyName: "hs_lastmodifieddate", Direction: "ASCENDING"}},
					Properties:   []string{"email"},
					Limit:        200,
					After:        "0",
				})
				if err != nil {
					t.Fatal(err)
				}
				if r.Total != 250 || r.After != "200" || len(r.Results) != 1 {
					t.Errorf("search result: %+v", r)
				}
				if len(r.Results) == 0 {
					t.Fatal("no result to check")
				}
				checkObj(t, &r.Results[0])
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/contacts/search",
			wantBody: `{"filterGroups":[{"filters":[{"propertyName":"email","operator":"EQ","value":"a@b.com"}]}],"sorts":[{"propertyName":"hs_lastmodifieddate","direction":"ASCENDING"}],"properties":["email"],"limit":200,"after":"0"}`,
		},
		{
			name: "Search last page", status: 200, respBody: `{"total":1,"results":[` + objJSON + `]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.Search(ctx, Deals, SearchRequest{})
				if err != nil {
					t.Fatal(err)
				}
				if r.After != "" || r.Total != 1 {
					t.Errorf("search result: %+v", r)
				}
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/deals/search", wantBody: `{}`,
		},
		{
			name: "Merge", status: 200, respBody: objJSON,
			call: func(t *testing.T, c *Client) {
				o, err := c.Merge(ctx, Contacts, "101", "202")
				if err != nil {
					t.Fatal(err)
				}
				checkObj(t, o)
			},
			wantMethod: "POST", wantPath: "/crm/v3/objects/contacts/merge",
			wantBody: `{"primaryObjectId":"101","objectIdToMerge":"202"}`,
		},
		{
			name: "SetSubscriptionStatus", status: 200,
			respBody: `{"businessUnitId":0,"channel":"EMAIL","subscriberIdString":"a@b.com","subscriptionId":123,"status":"UNSUBSCRIBED","source":"PUBLIC_API","legalBasis":null,"timestamp":"2024-01-02T03:04:05Z"}`,
			call: func(t *testing.T, c *Client) {
				s, err := c.SetSubscriptionStatus(ctx, "a@b.com", SubscriptionStatusInput{SubscriptionID: "123", StatusState: StatusUnsubscribed, LegalBasis: "CONSENT_WITH_NOTICE", LegalBasisExplanation: "asked"})
				if err != nil {
					t.Fatal(err)
				}
				want := SubscriptionStatus{SubscriptionID: "123", Status: "UNSUBSCRIBED", Channel: "EMAIL", BusinessUnitID: "0", Source: "PUBLIC_API", Timestamp: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
				if !reflect.DeepEqual(*s, want) {
					t.Errorf("status\n got %+v\nwant %+v", *s, want)
				}
			},
			wantMethod: "POST", wantPath: "/communication-preferences/v4/statuses/a@b.com",
			wantBody: `{"subscriptionId":123,"statusState":"UNSUBSCRIBED","channel":"EMAIL","legalBasis":"CONSENT_WITH_NOTICE","legalBasisExplanation":"asked"}`,
		},
		{
			name: "GetSubscriptionStatuses", status: 200,
			respBody: `{"status":"COMPLETE","results":[{"subscriptionId":"1","status":"SUBSCRIBED","channel":"EMAIL","businessUnitId":"5"},{"subscriptionId":2,"status":"NOT_SPECIFIED"}]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.GetSubscriptionStatuses(ctx, "a+x@b.com", "5")
				if err != nil {
					t.Fatal(err)
				}
				if len(r) != 2 || r[0].SubscriptionID != "1" || r[0].Status != StatusSubscribed || r[0].BusinessUnitID != "5" || r[1].SubscriptionID != "2" || r[1].Status != StatusNotSpecified {
					t.Errorf("statuses: %+v", r)
				}
			},
			wantMethod: "GET", wantPath: "/communication-preferences/v4/statuses/a+x@b.com", wantQuery: "businessUnitId=5&channel=EMAIL",
		},
		{
			name: "Subscribe v3", status: 200,
			respBody: `{"id":"42","name":"Newsletter","description":"d","status":"SUBSCRIBED","sourceOfStatus":"SUBSCRIPTION_STATUS","brandId":7,"preferenceGroupName":"g","legalBasis":"LEGITIMATE_INTEREST_CLIENT"}`,
			call: func(t *testing.T, c *Client) {
				s, err := c.Subscribe(ctx, SubscribeInput{EmailAddress: "a@b.com", SubscriptionID: "42"})
				if err != nil {
					t.Fatal(err)
				}
				if s.SubscriptionID != "42" || s.Name != "Newsletter" || s.Status != StatusSubscribed || s.BusinessUnitID != "7" || s.Source != "SUBSCRIPTION_STATUS" || s.LegalBasis != "LEGITIMATE_INTEREST_CLIENT" {
					t.Errorf("status: %+v", s)
				}
			},
			wantMethod: "POST", wantPath: "/communication-preferences/v3/subscribe",
			wantBody: `{"emailAddress":"a@b.com","subscriptionId":"42"}`,
		},
		{
			name: "Unsubscribe v3", status: 200, respBody: `{"id":"42","status":"unsubscribed"}`,
			call: func(t *testing.T, c *Client) {
				s, err := c.Unsubscribe(ctx, SubscribeInput{EmailAddress: "a@b.com", SubscriptionID: "42", LegalBasis: "CONSENT_WITH_NOTICE", LegalBasisExplanation: "e"})
				if err != nil {
					t.Fatal(err)
				}
				if s.Status != StatusUnsubscribed {
					t.Errorf("status: %+v", s)
				}
			},
			wantMethod: "POST", wantPath: "/communication-preferences/v3/unsubscribe",
			wantBody: `{"emailAddress":"a@b.com","subscriptionId":"42","legalBasis":"CONSENT_WITH_NOTICE","legalBasisExplanation":"e"}`,
		},
		{
			name: "GetSubscriptionStatusV3", status: 200,
			respBody: `{"recipient":"a@b.com","subscriptionStatuses":[{"id":"42","name":"N","status":"SUBSCRIBED"},{"id":"43","status":"NOT_SPECIFIED"}]}`,
			call: func(t *testing.T, c *Client) {
				r, err := c.GetSubscriptionStatusV3(ctx, "a@b.com")
				if err != nil {
					t.Fatal(err)
				}
				if len(r) != 2 || r[0].SubscriptionID != "42" || r[0].Name != "N" || r[1].Status != StatusNotSpecified {
					t.Errorf("statuses: %+v", r)
				}
			},
			wantMethod: "GET", wantPath: "/communication-preferences/v3/status/email/a@b.com",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{AccessToken: "pat-abc", UserAgent: "ua-test"})
			b.srv.reply(tt.status, nil, tt.respBody)
			tt.call(t, b.client)
			reqs := b.srv.requests()
			if len(reqs) != 1 {
				t.Fatalf("got %d requests, want 1", len(reqs))
			}
			r := reqs[0]
			if r.Method != tt.wantMethod || r.Path != tt.wantPath || r.RawQuery != tt.wantQuery {
				t.Errorf("request %s %s ?%s, want %s %s ?%s", r.Method, r.Path, r.RawQuery, tt.wantMethod, tt.wantPath, tt.wantQuery)
			}
			if r.Auth != "Bearer pat-abc" {
				t.Errorf("Authorization = %q", r.Auth)
			}
			if r.UserAgent != "ua-test" {
				t.Errorf("User-Agent = %q", r.UserAgent)
			}
			if tt.wantBody == "" {
				if len(r.Body) != 0 {
					t.Errorf("unexpected body %s", r.Body)
				}
				return
			}
			if r.ContentType != "application/json" {
				t.Errorf("Content-Type = %q", r.ContentType)
			}
			jsonEqual(t, r.Body, tt.wantBody)
		})
	}
}

func TestBatchTooLargeSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	ctx := context.Background()
	ids := make([]string, 101)
	for i := range ids {
		ids[i] = "x"
	}
	var errs []error
	_, err := b.client.BatchCreate(ctx, Contacts, make([]CreateInput, 101))
	errs = append(errs, err)
	_, err = b.client.BatchRead(ctx, Contacts, ids, nil, "")
	errs = append(errs, err)
	_, err = b.client.BatchUpdate(ctx, Contacts, make([]UpdateInput, 101))
	errs = append(errs, err)
	ups := make([]UpsertInput, 101)
	for i := range ups {
		ups[i] = UpsertInput{ID: "a", IDProperty: "email"}
	}
	_, err = b.client.BatchUpsert(ctx, Contacts, ups)
	errs = append(errs, err)
	errs = append(errs, b.client.BatchArchive(ctx, Contacts, ids))
	for i, err := range errs {
		if i == 2 {
			// Empty IDs are caught first; either rejection is fine as long as nothing is sent.
			if !errors.Is(err, ErrBatchTooLarge) && !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("call %d: %v", i, err)
			}
			continue
		}
		if !errors.Is(err, ErrBatchTooLarge) {
			t.Errorf("call %d: got %v, want ErrBatchTooLarge", i, err)
		}
		if KindOf(err) != KindPermanent {
			t.Errorf("call %d: KindOf = %v", i, KindOf(err))
		}
	}
	if _, err := b.client.BatchCreate(ctx, Contacts, nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := b.client.Search(ctx, Contacts, SearchRequest{Limit: 201}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("search limit 201: %v", err)
	}
	if _, err := b.client.Get(ctx, Contacts, "", nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("empty id: %v", err)
	}
	if _, err := b.client.SetSubscriptionStatus(ctx, "a@b.com", SubscriptionStatusInput{SubscriptionID: "1", StatusState: "subscribed"}); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("bad status state: %v", err)
	}
	if n := len(b.srv.requests()); n != 0 {
		t.Fatalf("%d requests sent for rejected calls", n)
	}
	// Exactly 100 is allowed.
	b.srv.reply(201, nil, `{"status":"COMPLETE","results":[]}`)
	if _, err := b.client.BatchCreate(ctx, Contacts, make([]CreateInput, 100)); err != nil {
		t.Fatalf("100 inputs: %v", err)
	}
}

func TestBatchMultiStatus(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.srv.reply(207, http.Header{HeaderRateLimitRemaining: {"42"}}, `{
		"status":"COMPLETE",
		"results":[{"id":"1","properties":{"email":"ok@x.com"}}],
		"numErrors":2,
		"errors":[
			{"status":"error","category":"CONFLICT","message":"Contact already exists. Existing ID: 987","context":{"objectWriteTraceId":["t2"]}},
			{"status":"error","category":"VALIDATION_ERROR","message":"Property values were not valid","subCategory":"x","context":{"objectWriteTraceId":["t3"],"propertyName":["email"]},
			 "errors":[{"message":"Invalid email"}]},
			{"status":"error","category":"CONFLICT","message":"dup","errors":[{"message":"Existing ID: 55"}]}
		],
		"requestedAt":"2024-01-01T00:00:00Z"}`)
	r, err := b.client.BatchCreate(context.Background(), Contacts, []CreateInput{
		{Properties: map[string]string{"email": "ok@x.com"}, ObjectWriteTraceID: "t1"},
		{Properties: map[string]string{"email": "dup@x.com"}, ObjectWriteTraceID: "t2"},
		{Properties: map[string]string{"email": "bad"}, ObjectWriteTraceID: "t3"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Multi || r.NumErrors != 3 || len(r.Errors) != 3 || r.RateLimit.Remaining != 42 {
		t.Fatalf("result: %+v", r)
	}
	if e := r.ErrorFor("t1"); e != nil {
		t.Errorf("t1 should have succeeded: %+v", e)
	}
	e2 := r.ErrorFor("t2")
	if e2 == nil || e2.ExistingID != "987" || e2.Kind() != KindConflict {
		t.Errorf("t2: %+v", e2)
	}
	e3 := r.ErrorFor("t3")
	if e3 == nil || e3.Kind() != KindValidation || e3.SubCategory != "x" || !reflect.DeepEqual(e3.Context["propertyName"], []string{"email"}) {
		t.Errorf("t3: %+v", e3)
	}
	if r.Errors[2].ExistingID != "55" || r.Errors[2].ObjectWriteTraceID != "" {
		t.Errorf("nested existing id: %+v", r.Errors[2])
	}
	if r.ErrorFor("") != nil {
		t.Errorf("ErrorFor(\"\") matched an error without a trace id")
	}
}

func TestErrorClassification(t *testing.T) {
	t.Parallel()
	now := time.Date(2024, 5, 6, 22, 30, 0, 0, time.UTC)
	tests := []struct {
		name       string
		status     int
		header     http.Header
		body       string
		kind       Kind
		sentinel   error
		retryAfter time.Duration
		check      func(t *testing.T, e *Error)
	}{
		{name: "429 ten secondly with interval", status: 429,
			header: http.Header{HeaderRateLimitInterval: {"10000"}, HeaderRateLimitMax: {"190"}, HeaderRateLimitRemaining: {"0"}},
			body:   `{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","correlationId":"c-1","policyName":"TEN_SECONDLY_ROLLING","groupName":"g"}`,
			kind:   KindRateLimited, sentinel: ErrRateLimited, retryAfter: 10 * time.Second,
			check: func(t *testing.T, e *Error) {
				if e.PolicyName != "TEN_SECONDLY_ROLLING" || e.ErrorType != "RATE_LIMIT" || e.CorrelationID != "c-1" || e.GroupName != "g" || e.RateLimit.Max != 190 || !e.RateLimit.Present {
					t.Errorf("fields: %+v", e)
				}
				if !errors.Is(e, ErrRetryable) {
					t.Errorf("rate limited error should also match ErrRetryable")
				}
			}},
		{name: "429 ten secondly custom interval", status: 429, header: http.Header{HeaderRateLimitInterval: {"2500"}},
			body: `{"policyName":"TEN_SECONDLY_ROLLING"}`, kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: 2500 * time.Millisecond},
		{name: "429 ten secondly no headers", status: 429, body: `{"policyName":"TEN_SECONDLY_ROLLING"}`,
			kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: 10 * time.Second},
		{name: "429 secondly", status: 429, body: `{"policyName":"SECONDLY"}`, kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: time.Second},
		{name: "429 daily", status: 429, body: `{"policyName":"DAILY","message":"daily"}`, kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: 90 * time.Minute},
		{name: "429 retry-after wins", status: 429, header: http.Header{"Retry-After": {"7"}}, body: `{"policyName":"DAILY"}`,
			kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: 7 * time.Second},
		{name: "429 retry-after date", status: 429, header: http.Header{"Retry-After": {now.Add(30 * time.Second).Format(http.TimeFormat)}},
			kind: KindRateLimited, sentinel: ErrRateLimited, retryAfter: 30 * time.Second},
		{name: "423 locked", status: 423, kind: KindRetryable, sentinel: ErrRetryable, retryAfter: 2 * time.Second},
		{name: "423 locked longer", status: 423, header: http.Header{"Retry-After": {"5"}}, kind: KindRetryable, sentinel: ErrRetryable, retryAfter: 5 * time.Second},
		{name: "477 migration", status: 477, header: http.Header{"Retry-After": {"3600"}}, kind: KindRetryable, sentinel: ErrRetryable, retryAfter: time.Hour},
		{name: "477 no header", status: 477, kind: KindRetryable, sentinel: ErrRetryable, retryAfter: RetryAfterMigrationDefault},
		{name: "500", status: 500, body: `{"status":"error","message":"internal","category":"INTERNAL_ERROR"}`, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "502", status: 502, body: `<html>bad gateway</html>`, kind: KindRetryable, sentinel: ErrRetryable,
			check: func(t *testing.T, e *Error) {
				if e.Message != "<html>bad gateway</html>" {
					t.Errorf("non-JSON body message: %q", e.Message)
				}
			}},
		{name: "503 retry-after", status: 503, header: http.Header{"Retry-After": {"3"}}, kind: KindRetryable, sentinel: ErrRetryable, retryAfter: 3 * time.Second},
		{name: "504", status: 504, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "521", status: 521, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "523", status: 523, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "524", status: 524, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "599", status: 599, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "409 conflict", status: 409, body: `{"status":"error","message":"Contact already exists. Existing ID: 123","correlationId":"c","category":"CONFLICT"}`,
			kind: KindConflict, sentinel: ErrConflict,
			check: func(t *testing.T, e *Error) {
				if e.ExistingID != "123" || e.Category != "CONFLICT" {
					t.Errorf("conflict fields: %+v", e)
				}
			}},
		{name: "409 existing id in errors[]", status: 409, body: `{"message":"conflicts","errors":[{"message":"x"},{"message":"Existing ID: 77","code":"DUP","in":"email","subCategory":"s","context":{"id":["77"]}}]}`,
			kind: KindConflict, sentinel: ErrConflict,
			check: func(t *testing.T, e *Error) {
				if e.ExistingID != "77" || len(e.Errors) != 2 || e.Errors[1].Code != "DUP" || e.Errors[1].In != "email" || e.Errors[1].Context["id"][0] != "77" {
					t.Errorf("conflict fields: %+v", e)
				}
			}},
		{name: "400 validation", status: 400, body: `{"status":"error","message":"Property values were not valid","category":"VALIDATION_ERROR","subCategory":{"weird":1},"context":{"properties":["a","b"],"single":"c"}}`,
			kind: KindValidation, sentinel: ErrValidation,
			check: func(t *testing.T, e *Error) {
				if e.SubCategory != `{"weird":1}` || !reflect.DeepEqual(e.Context["properties"], []string{"a", "b"}) || !reflect.DeepEqual(e.Context["single"], []string{"c"}) {
					t.Errorf("lenient fields: %+v", e)
				}
			}},
		{name: "422", status: 422, kind: KindValidation, sentinel: ErrValidation},
		{name: "404", status: 404, body: `{"message":"resource not found","category":"OBJECT_NOT_FOUND"}`, kind: KindNotFound, sentinel: ErrNotFound},
		{name: "401", status: 401, body: `{"category":"INVALID_AUTHENTICATION"}`, kind: KindAuth, sentinel: ErrAuth},
		{name: "403", status: 403, body: `{"category":"MISSING_SCOPES"}`, kind: KindAuth, sentinel: ErrAuth},
		{name: "405", status: 405, kind: KindPermanent, sentinel: ErrPermanent},
		{name: "413", status: 413, kind: KindPermanent, sentinel: ErrPermanent},
		{name: "408", status: 408, kind: KindRetryable, sentinel: ErrRetryable},
		{name: "empty body", status: 404, kind: KindNotFound, sentinel: ErrNotFound,
			check: func(t *testing.T, e *Error) {
				if e.Message != "Not Found" {
					t.Errorf("message: %q", e.Message)
				}
			}},
		{name: "long non-JSON body truncated", status: 500, body: strings.Repeat("é", 1000), kind: KindRetryable, sentinel: ErrRetryable,
			check: func(t *testing.T, e *Error) {
				if len(e.Message) > errorBodyMax+len("…") || !strings.HasSuffix(e.Message, "…") || !utf8Valid(e.Message) {
					t.Errorf("message not truncated cleanly: %d bytes", len(e.Message))
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{})
			b.client.now = func() time.Time { return now }
			b.srv.reply(tt.status, tt.header, tt.body)
			_, err := b.client.Get(context.Background(), Contacts, "1", nil)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("got %T %v, want *Error", err, err)
			}
			if e.StatusCode != tt.status || e.Kind != tt.kind || KindOf(err) != tt.kind {
				t.Errorf("status %d kind %v, want %d %v", e.StatusCode, e.Kind, tt.status, tt.kind)
			}
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.sentinel)
			}
			for _, other := range []error{ErrConflict, ErrValidation, ErrNotFound, ErrAuth, ErrPermanent} {
				if other != tt.sentinel && errors.Is(err, other) {
					t.Errorf("error also matches %v", other)
				}
			}
			if e.RetryAfter != tt.retryAfter || RetryAfterOf(err) != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", e.RetryAfter, tt.retryAfter)
			}
			if e.Method != "GET" || e.Path != "/crm/v3/objects/contacts/1" || !strings.Contains(e.Error(), "/crm/v3/objects/contacts/1") {
				t.Errorf("error does not name the request: %v", e)
			}
			if tt.check != nil {
				tt.check(t, e)
			}
		})
	}
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func TestRateLimitHeaders(t *testing.T) {
	t.Parallel()
	type seen struct {
		rl     RateLimit
		status int
		err    *Error
	}
	ch := make(chan seen, 10)
	b := setup(t, Config{OnResponse: func(_ context.Context, r Response) { ch <- seen{r.RateLimit, r.StatusCode, r.Err} }})
	full := http.Header{
		HeaderRateLimitInterval:       {"10000"},
		HeaderRateLimitMax:            {"190"},
		HeaderRateLimitRemaining:      {"189"},
		HeaderRateLimitDaily:          {"625000"},
		HeaderRateLimitDailyRemaining: {"624000"},
	}
	want := RateLimit{IntervalMillis: 10000, Max: 190, Remaining: 189, DailyMax: 625000, DailyRemaining: 624000, Present: true}
	b.srv.reply(200, full, objJSON)
	if _, err := b.client.Get(context.Background(), Contacts, "1", nil); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, "OnResponse of the read", ch); got.rl != want || got.status != 200 {
		t.Errorf("OnResponse got %+v", got)
	}

	// A search-like response without headers is reported without them.
	b.srv.reply(200, nil, `{"total":0,"results":[]}`)
	if _, err := b.client.Search(context.Background(), Contacts, SearchRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := testwait.Recv(t, "OnResponse of the search", ch); got.rl.Present {
		t.Errorf("search response reported headers: %+v", got)
	}

	// Errors report too.
	b.srv.reply(429, http.Header{HeaderRateLimitRemaining: {"0"}, HeaderRateLimitMax: {"100"}}, `{"policyName":"TEN_SECONDLY_ROLLING"}`)
	_, err := b.client.Get(context.Background(), Contacts, "1", nil)
	if got := testwait.Recv(t, "OnResponse of the 429", ch); got.status != 429 || got.rl.Remaining != 0 || got.rl.Max != 100 ||
		got.err == nil || got.err.Kind != KindRateLimited || got.err.PolicyName != "TEN_SECONDLY_ROLLING" {
		t.Errorf("OnResponse for 429: %+v", got)
	}
	var e *Error
	if !errors.As(err, &e) || e.RateLimit.Max != 100 {
		t.Errorf("error rate limit: %v", err)
	}

	// Malformed headers are ignored.
	if rl := ParseRateLimit(http.Header{HeaderRateLimitMax: {"lots"}, HeaderRateLimitRemaining: {"-1"}}); rl.Present {
		t.Errorf("malformed headers parsed: %+v", rl)
	}
}

// blockingHandler holds each request until its context ends, announcing it on started.
func blockingHandler(started chan<- struct{}) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		<-r.Context().Done()
	}
}

func TestCallerCancellationIsNotRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Timeout: time.Hour})
	started := make(chan struct{}, 1)
	b.srv.handler = blockingHandler(started)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := b.client.Get(ctx, Contacts, "1", nil)
		errc <- err
	}()
	testwait.Recv(t, "the request to reach the server", started)
	cancel()
	err := testwait.Recv(t, "the call to return", errc)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if KindOf(err) != KindNone || errors.Is(err, ErrRetryable) {
		t.Errorf("caller cancellation classified as %v", KindOf(err))
	}
	var e *Error
	if errors.As(err, &e) {
		t.Errorf("caller cancellation returned *Error %v", e)
	}
}

func TestCallerDeadlineIsNotRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Timeout: time.Hour})
	started := make(chan struct{}, 1)
	b.srv.handler = blockingHandler(started)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := b.client.Get(ctx, Contacts, "1", nil)
	if !errors.Is(err, context.DeadlineExceeded) || KindOf(err) != KindNone {
		t.Fatalf("got %v (kind %v), want caller's DeadlineExceeded unclassified", err, KindOf(err))
	}
}

func TestRequestTimeoutIsRetryable(t *testing.T) {
	t.Parallel()
	for _, ownHTTPClient := range []bool{false, true} {
		cfg := Config{Timeout: 20 * time.Millisecond}
		if ownHTTPClient {
			cfg.HTTPClient = &http.Client{} // only the per-request context bounds it
		}
		b := setup(t, cfg)
		started := make(chan struct{}, 1)
		b.srv.handler = blockingHandler(started)
		_, err := b.client.Get(context.Background(), Contacts, "1", nil)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindRetryable || e.StatusCode != 0 || e.Unwrap() == nil || !errors.Is(err, ErrRetryable) {
			t.Fatalf("own client %v: got %v, want retryable transport *Error", ownHTTPClient, err)
		}
	}
}

func TestConnectionRefusedIsRetryable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	c, err := NewClient(Config{AccessToken: "x", BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Archive(context.Background(), Contacts, "1")
	if KindOf(err) != KindRetryable || !errors.Is(err, ErrRetryable) {
		t.Fatalf("got %v (kind %v), want retryable", err, KindOf(err))
	}
}

func TestConnectionDroppedMidBodyIsRetryable(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.srv.handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, `{"id":"1"`)
		// Returning with fewer bytes than promised makes the server drop the connection.
	}
	_, err := b.client.Get(context.Background(), Contacts, "1", nil)
	if KindOf(err) != KindRetryable {
		t.Fatalf("got %v (kind %v), want retryable", err, KindOf(err))
	}
}

func TestUndecodableSuccessBody(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	b.srv.reply(200, nil, `<html>not json</html>`)
	_, err := b.client.Get(context.Background(), Contacts, "1", nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindPermanent || e.StatusCode != 200 || !strings.Contains(e.Message, "not json") {
		t.Fatalf("got %v", err)
	}
}

// TestOversizedSuccessBody: a success answer past the client's limit is not
// cut short and reported as malformed (a permanent failure, though the write
// may have been applied) but as a lost answer, which is retried.
func TestOversizedSuccessBody(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	body := `{"id":"1","properties":{"email":"` + strings.Repeat("a", 200) + `@example.com"}}`
	b.srv.reply(200, nil, body)
	b.client.bodyMax = int64(len(body))
	if _, err := b.client.Get(context.Background(), Contacts, "1", nil); err != nil {
		t.Fatalf("a body of exactly the limit: %v", err)
	}
	b.client.bodyMax = int64(len(body)) - 1
	_, err := b.client.Get(context.Background(), Contacts, "1", nil)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindRetryable || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a body past the limit: %v; want a retryable error saying it is too large", err)
	}
}

func TestKindOfHelpers(t *testing.T) {
	t.Parallel()
	if KindOf(nil) != KindNone || RetryAfterOf(nil) != 0 {
		t.Error("nil error")
	}
	if KindOf(errors.New("x")) != KindNone {
		t.Error("foreign error")
	}
	wrapped := fmt.Errorf("outbox: %w", &Error{Kind: KindConflict, RetryAfter: time.Second})
	if KindOf(wrapped) != KindConflict || RetryAfterOf(wrapped) != time.Second || !errors.Is(wrapped, ErrConflict) {
		t.Error("wrapped error not seen through")
	}
	for k := KindNone; k <= KindPermanent+1; k++ {
		if k.String() == "" {
			t.Errorf("Kind %d has no name", k)
		}
	}
}

func FuzzParseError(f *testing.F) {
	f.Add(429, `{"status":"error","message":"You have reached your ten_secondly_rolling limit.","errorType":"RATE_LIMIT","correlationId":"x","policyName":"TEN_SECONDLY_ROLLING","groupName":"g"}`, "10000", "")
	f.Add(409, `{"message":"Contact already exists. Existing ID: 123","category":"CONFLICT","errors":[{"message":"Existing ID: 4","context":{"a":["b"]}}]}`, "", "")
	f.Add(400, `{"context":{"a":"b","c":[1,null,{"x":1}]},"subCategory":[1],"errors":[null,{"code":5}]}`, "", "1")
	f.Add(500, "<html>\xff\xfe</html>", "x", "Wed, 21 Oct 2015 07:28:00 GMT")
	f.Add(0, "", "", "-5")
	f.Fuzz(func(t *testing.T, status int, body, interval, retryAfter string) {
		h := http.Header{}
		h.Set(HeaderRateLimitInterval, interval)
		h.Set("Retry-After", retryAfter)
		e := parseError("GET", "/p", status, h, []byte(body), time.Unix(1_700_000_000, 0))
		if e == nil {
			t.Fatal("nil error")
		}
		if e.Kind == KindNone {
			t.Fatalf("status %d left unclassified", status)
		}
		if e.RetryAfter < 0 {
			t.Fatalf("negative RetryAfter %v", e.RetryAfter)
		}
		if status == 429 && (e.Kind != KindRateLimited || e.RetryAfter <= 0 && retryAfter == "") {
			t.Fatalf("429 classified %v after %v", e.Kind, e.RetryAfter)
		}
		if len(e.Message) > messageMax+len("…") {
			t.Fatalf("message too long: %d", len(e.Message))
		}
		_ = e.Error()
	})
}
