package hubspotsim

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzAPIBodies feeds arbitrary bodies to the JSON endpoints: the simulator
// must answer every one with a well-formed status, never panic.
func FuzzAPIBodies(f *testing.F) {
	for _, seed := range []string{
		`{"properties":{"email":"a@x.com","n":1,"b":true,"z":null}}`,
		`{"inputs":[{"id":"a@x.com","idProperty":"email","properties":{"x":"1"}}]}`,
		`{"filterGroups":[{"filters":[{"propertyName":"email","operator":"CONTAINS_TOKEN","value":"*@x*"}]}],"sorts":["-createdate"],"after":"5","limit":3}`,
		`{"primaryObjectId":"1001","objectIdToMerge":"1002"}`,
		`{"properties":{"a":{}}}`, `[`, ``, `null`,
	} {
		f.Add(seed)
	}
	s, err := New(Config{})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	s.UserCreate("contacts", map[string]string{"email": "a@x.com"})
	paths := []string{
		"POST /crm/v3/objects/contacts", "POST /crm/v3/objects/contacts/batch/create",
		"POST /crm/v3/objects/contacts/batch/upsert", "POST /crm/v3/objects/contacts/batch/update",
		"POST /crm/v3/objects/contacts/batch/read", "POST /crm/v3/objects/contacts/search",
		"POST /crm/v3/objects/contacts/merge", "PATCH /crm/v3/objects/contacts/1001",
		"POST /communication-preferences/v4/statuses/a@x.com",
	}
	f.Fuzz(func(t *testing.T, body string) {
		for _, p := range paths {
			method, path, _ := strings.Cut(p, " ")
			req := httptest.NewRequest(method, path, strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+AccessTokenDefault)
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code < 200 || rec.Code >= 500 {
				t.Fatalf("%s with %q: status %d", p, body, rec.Code)
			}
			if rec.Code == http.StatusTooManyRequests {
				s.SetLimits(1_000_000, 1_000_000_000)
			}
		}
	})
}
