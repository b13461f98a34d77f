package hubspotsim

import (
	"encoding/json"
	"github.com/hubsync/hubsync/internal/testcheck"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestControlAPI(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Faults: Faults{Error500: 1}}) // control paths ignore faults
	ctl := func(method, path string, body any, status int) answer {
		t.Helper()
		a := b.doToken("", method, "/_sim"+path, body)
		wantStatus(t, a, status)
		return a
	}
	a := ctl("POST", "/objects/contacts", props("email", "U@x.com", "firstname", "U"), http.StatusCreated)
	var o Object
	if err := json.Unmarshal(a.body, &o); err != nil || o.Properties["email"] != "u@x.com" {
		t.Fatalf("created = %s (%v)", a.body, err)
	}
	ctl("POST", "/objects/contacts", props("email", "u@x.com"), http.StatusConflict)
	o2 := testcheck.As[string](t, "id", ctl("POST", "/objects/contacts", props("email", "v@x.com"), http.StatusCreated).json(t)["id"])
	ctl("PATCH", "/objects/contacts/"+o.ID, props("lastname", "L"), http.StatusOK)
	ctl("PATCH", "/objects/contacts/123456", props("lastname", "L"), http.StatusNotFound)
	ctl("POST", "/objects/contacts/merge", map[string]any{"primaryObjectId": o.ID, "objectIdToMerge": o2}, http.StatusOK)
	ctl("POST", "/objects/companies", props("name", "Acme"), http.StatusCreated)

	var all map[string][]Object
	json.Unmarshal(ctl("GET", "/objects", nil, http.StatusOK).body, &all)
	if len(all["contacts"]) != 1 || all["contacts"][0].Properties["lastname"] != "L" || len(all["companies"]) != 1 {
		t.Fatalf("dump = %+v", all)
	}
	var list []Object
	json.Unmarshal(ctl("GET", "/objects/companies", nil, http.StatusOK).body, &list)
	if len(list) != 1 {
		t.Fatalf("companies = %+v, want the 1 created", list)
	}
	ctl("DELETE", "/objects/companies/"+list[0].ID, nil, http.StatusNoContent)
	if len(b.srv.Objects("companies")) != 0 {
		t.Fatal("control delete did not archive")
	}

	ctl("PUT", "/faults", map[string]any{"error503": 0.25, "latency": "5ms"}, http.StatusOK)
	var f Faults
	json.Unmarshal(ctl("GET", "/faults", nil, http.StatusOK).body, &f)
	if f.Error503 != 0.25 || f.Latency != 5*time.Millisecond || f.Error500 != 0 {
		t.Fatalf("faults = %+v", f)
	}
	ctl("PUT", "/faults", map[string]any{"error503": 3}, http.StatusBadRequest)
	if a := ctl("PUT", "/faults", map[string]any{"error_500": 0.5}, http.StatusBadRequest); !strings.Contains(string(a.body), "unknown fault") || !strings.Contains(string(a.body), "error_500") {
		t.Errorf("a misspelt fault: %s; want an error naming it", a.body)
	}
	ctl("PUT", "/limits", map[string]any{"tenSecond": 1}, http.StatusOK)
	b.srv.SetFaults(Faults{})
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusTooManyRequests)

	var c Counters
	json.Unmarshal(ctl("GET", "/counters", nil, http.StatusOK).body, &c)
	if c.Requests != 2 || c.ObjectsCreated != 3 || c.Conflicts409 != 0 || c.RateLimited429["TEN_SECONDLY_ROLLING"] != 1 {
		t.Fatalf("counters = %+v", c)
	}
	ctl("POST", "/counters/reset", nil, http.StatusNoContent)
	if b.srv.Counters().Requests != 0 {
		t.Fatal("counters not reset")
	}
}
