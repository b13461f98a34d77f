package hubspotsim

import (
	"fmt"
	"github.com/hubsync/hubsync/internal/testcheck"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func wantError(t *testing.T, a answer, status int, category string) map[string]any {
	t.Helper()
	wantStatus(t, a, status)
	m := a.json(t)
	if m["status"] != "error" || m["category"] != category || m["message"] == "" {
		t.Fatalf("error body = %s, want status error, category %s", a.body, category)
	}
	if id, _ := m["correlationId"].(string); !uuidRE.MatchString(id) {
		t.Fatalf("correlationId %q is not a uuid", id)
	}
	return m
}

func TestAuth(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	for _, tok := range []string{"", "wrong"} {
		a := b.doToken(tok, "GET", "/crm/v3/objects/contacts", nil)
		wantError(t, a, http.StatusUnauthorized, "INVALID_AUTHENTICATION")
	}
	wantStatus(t, b.do("GET", "/crm/v3/objects/contacts", nil), http.StatusOK)
}

func TestSingleObjectLifecycle(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	a := b.do("POST", "/crm/v3/objects/contacts", props("email", "Ann@Example.com", "firstname", "Ann", "custom_x", "1"))
	wantStatus(t, a, http.StatusCreated)
	m := a.json(t)
	id := testcheck.As[string](t, "id", m["id"])
	p := testcheck.As[map[string]any](t, "properties", m["properties"])
	if p["email"] != "ann@example.com" || p["hs_object_id"] != id || p["createdate"] == nil || p["lastmodifieddate"] == nil {
		t.Fatalf("create properties = %v", p)
	}
	if m["createdAt"] != "2025-03-01T12:00:00.000Z" || m["archived"] != false {
		t.Fatalf("create body = %s", a.body)
	}
	for _, h := range []string{"X-HubSpot-RateLimit-Interval-Milliseconds", "X-HubSpot-RateLimit-Max", "X-HubSpot-RateLimit-Remaining", "X-HubSpot-RateLimit-Daily", "X-HubSpot-RateLimit-Daily-Remaining"} {
		if a.header.Get(h) == "" {
			t.Errorf("missing header %s", h)
		}
	}

	// Default read returns only the default properties; custom ones must be asked for.
	a = b.do("GET", "/crm/v3/objects/contacts/"+id, nil)
	wantStatus(t, a, http.StatusOK)
	p = testcheck.As[map[string]any](t, "properties", a.json(t)["properties"])
	if _, ok := p["custom_x"]; ok || p["firstname"] != "Ann" {
		t.Fatalf("default read properties = %v", p)
	}
	a = b.do("GET", "/crm/v3/objects/contacts/"+id+"?properties=custom_x,missing", nil)
	p = testcheck.As[map[string]any](t, "properties", a.json(t)["properties"])
	if p["custom_x"] != "1" || p["missing"] != nil {
		t.Fatalf("requested properties = %v", p)
	}
	if _, ok := p["missing"]; !ok {
		t.Fatal("requested property without value should be null, not absent")
	}
	a = b.do("GET", "/crm/v3/objects/contacts/ANN@example.com?idProperty=email", nil)
	wantStatus(t, a, http.StatusOK)
	wantError(t, b.do("GET", "/crm/v3/objects/contacts/"+id+"?idProperty=hs_object_id", nil), 400, "VALIDATION_ERROR")

	b.clock.Advance(1500)
	a = b.do("PATCH", "/crm/v3/objects/contacts/"+id, props("firstname", "Anna"))
	wantStatus(t, a, http.StatusOK)
	if got := testcheck.As[map[string]any](t, "properties", a.json(t)["properties"])["firstname"]; got != "Anna" {
		t.Fatalf("patched firstname = %v", got)
	}
	wantError(t, b.do("PATCH", "/crm/v3/objects/contacts/"+id, props("hs_object_id", "5")), 400, "VALIDATION_ERROR")
	wantError(t, b.do("PATCH", "/crm/v3/objects/contacts/"+id, "{not json"), 400, "VALIDATION_ERROR")

	wantStatus(t, b.do("DELETE", "/crm/v3/objects/contacts/"+id, nil), http.StatusNoContent)
	wantError(t, b.do("GET", "/crm/v3/objects/contacts/"+id, nil), 404, "OBJECT_NOT_FOUND")
	wantError(t, b.do("PATCH", "/crm/v3/objects/contacts/"+id, props("firstname", "x")), 404, "OBJECT_NOT_FOUND")
	wantError(t, b.do("DELETE", "/crm/v3/objects/contacts/"+id, nil), 404, "OBJECT_NOT_FOUND")
	wantError(t, b.do("GET", "/crm/v3/objects/contacts/nope", nil), 404, "OBJECT_NOT_FOUND")
	a = b.do("GET", "/crm/v3/objects/contacts/"+id+"?archived=true", nil)
	wantStatus(t, a, http.StatusOK)
	if a.json(t)["archived"] != true {
		t.Fatalf("archived read = %s", a.body)
	}
	// The email is free again once its contact is archived.
	wantStatus(t, b.do("POST", "/crm/v3/objects/contacts", props("email", "ann@example.com")), http.StatusCreated)

	// Any object type works, including custom ones and numeric type ids.
	wantStatus(t, b.do("POST", "/crm/v3/objects/2-123", props("name", "x")), http.StatusCreated)
	wantStatus(t, b.do("POST", "/crm/v3/objects/0-2", props("name", "Acme")), http.StatusCreated)
	if objs := b.srv.Objects("companies"); len(objs) != 1 || objs[0].Properties["name"] != "Acme" {
		t.Fatalf("companies = %+v", objs)
	}
}

func TestContactEmailConflict(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	id := testcheck.As[string](t, "id", b.do("POST", "/crm/v3/objects/contacts", props("email", "a@x.com")).json(t)["id"])

	m := wantError(t, b.do("POST", "/crm/v3/objects/contacts", props("email", "A@X.COM")), http.StatusConflict, "CONFLICT")
	if m["message"] != "Contact already exists. Existing ID: "+id {
		t.Fatalf("409 message = %q", m["message"])
	}
	id2 := testcheck.As[string](t, "id", b.do("POST", "/crm/v3/objects/contacts", props("email", "b@x.com")).json(t)["id"])
	wantError(t, b.do("PATCH", "/crm/v3/objects/contacts/"+id2, props("email", "a@x.com")), http.StatusConflict, "CONFLICT")

	// Batch create: the whole batch fails, reporting only the first conflict.
	a := b.do("POST", "/crm/v3/objects/contacts/batch/create", map[string]any{"inputs": []any{
		props("email", "new1@x.com"), props("email", "b@x.com"), props("email", "a@x.com"),
	}})
	m = wantError(t, a, http.StatusConflict, "CONFLICT")
	if m["message"] != "Contact already exists. Existing ID: "+id2 {
		t.Fatalf("batch 409 message = %q", m["message"])
	}
	if len(b.srv.Objects("contacts")) != 2 {
		t.Fatal("a failed batch create must not create anything")
	}
	// Two inputs with the same email in one batch.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/create", map[string]any{"inputs": []any{
		props("email", "dup@x.com"), props("email", "DUP@x.com"),
	}})
	wantError(t, a, http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, b.do("POST", "/crm/v3/objects/contacts", props("email", "not-an-email")), 400, "VALIDATION_ERROR")
	if c := b.srv.Counters(); c.Conflicts409 != 3 || c.ObjectsCreated != 2 {
		t.Fatalf("counters = %+v", c)
	}
}

func inputs(n int, f func(i int) map[string]any) map[string]any {
	var in []any
	for i := range n {
		in = append(in, f(i))
	}
	return map[string]any{"inputs": in}
}

func TestBatchEndpoints(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	a := b.do("POST", "/crm/v3/objects/contacts/batch/create", inputs(101, func(i int) map[string]any { return props("email", fmt.Sprintf("c%d@x.com", i)) }))
	wantError(t, a, http.StatusBadRequest, "VALIDATION_ERROR")
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/batch/create", `{"inputs": [`), 400, "VALIDATION_ERROR")

	a = b.do("POST", "/crm/v3/objects/contacts/batch/create", inputs(3, func(i int) map[string]any { return props("email", fmt.Sprintf("c%d@x.com", i)) }))
	wantStatus(t, a, http.StatusCreated)
	m := a.json(t)
	res := testcheck.As[[]any](t, "results", m["results"])
	if m["status"] != "COMPLETE" || len(res) != 3 || m["startedAt"] == nil || m["completedAt"] == nil {
		t.Fatalf("batch create body = %s", a.body)
	}
	var ids []string
	for _, r := range res {
		ids = append(ids, testcheck.As[string](t, "id", testcheck.As[map[string]any](t, "r", r)["id"]))
	}

	// Update with one missing id: 207 with a not-found entry carrying the trace id.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/update", map[string]any{"inputs": []any{
		map[string]any{"id": ids[0], "objectWriteTraceId": "t0", "properties": map[string]any{"firstname": "A"}},
		map[string]any{"id": "999999", "objectWriteTraceId": "t1", "properties": map[string]any{"firstname": "B"}},
	}})
	wantStatus(t, a, http.StatusMultiStatus)
	m = a.json(t)
	errs := testcheck.As[[]any](t, "errors", m["errors"])
	if m["numErrors"] != 1.0 || len(errs) != 1 || len(testcheck.As[[]any](t, "results", m["results"])) != 1 {
		t.Fatalf("207 body = %s", a.body)
	}
	e := testcheck.As[map[string]any](t, "errs element 0", testcheck.Index(t, "errs", errs, 0))
	if e["status"] != "error" || e["category"] != "OBJECT_NOT_FOUND" || fmt.Sprint(testcheck.As[map[string]any](t, "context", e["context"])["objectWriteTraceId"]) != "[t1]" {
		t.Fatalf("207 error entry = %v", e)
	}
	for _, k := range []string{"requestedAt", "startedAt", "completedAt"} {
		if m[k] == nil {
			t.Errorf("207 body lacks %s", k)
		}
	}
	// All missing: 404.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/update", map[string]any{"inputs": []any{map[string]any{"id": "999999", "properties": map[string]any{"firstname": "B"}}}})
	wantError(t, a, http.StatusNotFound, "OBJECT_NOT_FOUND")
	// Duplicate ids.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/update", map[string]any{"inputs": []any{
		map[string]any{"id": ids[0], "properties": map[string]any{}}, map[string]any{"id": ids[0], "properties": map[string]any{}},
	}})
	wantError(t, a, http.StatusBadRequest, "VALIDATION_ERROR")

	// Read by id (with a missing one) and by email.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"properties": []string{"email", "firstname"}, "inputs": []any{map[string]any{"id": ids[0]}, map[string]any{"id": "424242"}}})
	wantStatus(t, a, http.StatusMultiStatus)
	m = a.json(t)
	if len(testcheck.As[[]any](t, "results", m["results"])) != 1 || m["numErrors"] != 1.0 {
		t.Fatalf("batch read body = %s", a.body)
	}
	a = b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"idProperty": "email", "inputs": []any{map[string]any{"id": "C1@x.com"}}})
	wantStatus(t, a, http.StatusOK)
	if got := testcheck.As[map[string]any](t, "results", testcheck.Index(t, "results", testcheck.As[[]any](t, "results", a.json(t)["results"]), 0))["id"]; got != ids[1] {
		t.Fatalf("read by email id = %v, want %s", got, ids[1])
	}
	// A read that finds nothing is a plain 404, as HubSpot answers it.
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"idProperty": "email", "inputs": []any{map[string]any{"id": "nobody@x.com"}}}), 404, "OBJECT_NOT_FOUND")
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"inputs": []any{map[string]any{"id": "424242"}}}), 404, "OBJECT_NOT_FOUND")
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/batch/read", map[string]any{"idProperty": "hs_object_id", "inputs": []any{map[string]any{"id": ids[0]}}}), 400, "VALIDATION_ERROR")

	// Upsert by email: one update, one create.
	a = b.do("POST", "/crm/v3/objects/contacts/batch/upsert", map[string]any{"inputs": []any{
		map[string]any{"id": "C2@X.com", "idProperty": "email", "properties": map[string]any{"firstname": "Up"}},
		map[string]any{"id": "fresh@x.com", "idProperty": "email", "properties": map[string]any{"firstname": "New"}},
	}})
	wantStatus(t, a, http.StatusOK)
	res = testcheck.As[[]any](t, "results", a.json(t)["results"])
	if r0 := testcheck.As[map[string]any](t, "res element 0", testcheck.Index(t, "res", res, 0)); r0["id"] != ids[2] || r0["new"] != false {
		t.Fatalf("upsert existing = %v", r0)
	}
	if r1 := testcheck.As[map[string]any](t, "res element 1", testcheck.Index(t, "res", res, 1)); r1["new"] != true || testcheck.As[map[string]any](t, "properties", r1["properties"])["email"] != "fresh@x.com" {
		t.Fatalf("upsert new = %v", r1)
	}
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/batch/upsert", map[string]any{"inputs": []any{
		map[string]any{"id": ids[0], "idProperty": "hs_object_id", "properties": map[string]any{}},
	}}), 400, "VALIDATION_ERROR")

	// Archive: 204, missing ids ignored.
	wantStatus(t, b.do("POST", "/crm/v3/objects/contacts/batch/archive", map[string]any{"inputs": []any{map[string]any{"id": ids[0]}, map[string]any{"id": "77"}}}), http.StatusNoContent)
	if _, ok := b.srv.Object("contacts", ids[0]); !ok || len(b.srv.Objects("contacts")) != 3 {
		t.Fatalf("after archive: %+v", b.srv.Objects("contacts"))
	}
	if c := b.srv.Counters(); c.RequestsByPath["POST /crm/v3/objects/contacts/batch/upsert"] != 2 {
		t.Fatalf("RequestsByPath = %v", c.RequestsByPath)
	}
}

func TestPartialFailureFault(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Seed: 7, Faults: Faults{PartialFailure: 0.5}})
	a := b.do("POST", "/crm/v3/objects/deals/batch/create", inputs(40, func(i int) map[string]any {
		return map[string]any{"objectWriteTraceId": fmt.Sprint("trace-", i), "properties": map[string]any{"dealname": fmt.Sprint("d", i)}}
	}))
	wantStatus(t, a, http.StatusMultiStatus)
	m := a.json(t)
	errs, res := testcheck.As[[]any](t, "errors", m["errors"]), testcheck.As[[]any](t, "results", m["results"])
	if len(errs) == 0 || len(res) == 0 || len(errs)+len(res) != 40 {
		t.Fatalf("errors %d results %d", len(errs), len(res))
	}
	for _, e := range errs {
		e := testcheck.As[map[string]any](t, "e", e)
		trace := testcheck.As[[]any](t, "objectWriteTraceId", testcheck.As[map[string]any](t, "context", e["context"])["objectWriteTraceId"])
		if e["category"] != "VALIDATION_ERROR" || !strings.HasPrefix(testcheck.As[string](t, "trace element 0", testcheck.Index(t, "trace", trace, 0)), "trace-") {
			t.Fatalf("error entry = %v", e)
		}
	}
	if c := b.srv.Counters(); c.FaultsInjected["partialFailure"] != int64(len(errs)) || c.ObjectsCreated != int64(len(res)) {
		t.Fatalf("counters = %+v", c)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	p := testcheck.As[string](t, "id", b.do("POST", "/crm/v3/objects/contacts", props("email", "p@x.com", "firstname", "P")).json(t)["id"])
	m := testcheck.As[string](t, "id", b.do("POST", "/crm/v3/objects/contacts", props("email", "m@x.com", "firstname", "M", "phone", "123")).json(t)["id"])
	a := b.do("POST", "/crm/v3/objects/contacts/merge", map[string]any{"primaryObjectId": p, "objectIdToMerge": m})
	wantStatus(t, a, http.StatusOK)
	pp := testcheck.As[map[string]any](t, "properties", a.json(t)["properties"])
	if pp["hs_merged_object_ids"] != m || pp["firstname"] != "P" || pp["phone"] != "123" {
		t.Fatalf("merged primary = %v", pp)
	}
	o, ok := b.srv.Object("contacts", m)
	if !ok || !o.Archived || o.MergedInto != p {
		t.Fatalf("merged object = %+v", o)
	}
	// Reading the merged id answers with the primary; writing it is 404.
	a = b.do("GET", "/crm/v3/objects/contacts/"+m, nil)
	wantStatus(t, a, http.StatusOK)
	if a.json(t)["id"] != p {
		t.Fatalf("read of merged id = %s", a.body)
	}
	wantError(t, b.do("PATCH", "/crm/v3/objects/contacts/"+m, props("firstname", "x")), 404, "OBJECT_NOT_FOUND")
	// The merged-away email now belongs to the primary.
	m409 := wantError(t, b.do("POST", "/crm/v3/objects/contacts", props("email", "m@x.com")), 409, "CONFLICT")
	if !strings.HasSuffix(testcheck.As[string](t, "message", m409["message"]), p) {
		t.Fatalf("409 after merge = %v", m409["message"])
	}
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/merge", map[string]any{"primaryObjectId": p, "objectIdToMerge": p}), 400, "VALIDATION_ERROR")
}

func TestSearch(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{SearchPerSecond: 100})
	for i := range 25 {
		b.do("POST", "/crm/v3/objects/contacts", props("email", fmt.Sprintf("u%02d@%s.com", i, []string{"acme", "other"}[i%2]), "age", fmt.Sprint(i)))
	}
	search := func(body map[string]any) (answer, map[string]any) {
		a := b.do("POST", "/crm/v3/objects/contacts/search", body)
		wantStatus(t, a, http.StatusOK)
		return a, a.json(t)
	}
	a, m := search(map[string]any{
		"filterGroups": []any{map[string]any{"filters": []any{
			map[string]any{"propertyName": "email", "operator": "CONTAINS_TOKEN", "value": "*@acme.com"},
			map[string]any{"propertyName": "age", "operator": "GT", "value": "10"},
		}}},
		"sorts":      []any{map[string]any{"propertyName": "age", "direction": "DESCENDING"}},
		"properties": []string{"email", "age"},
		"limit":      2,
	})
	if a.header.Get("X-HubSpot-RateLimit-Max") != "" || a.header.Get("X-HubSpot-RateLimit-Remaining") != "" {
		t.Fatal("search answers must not carry rate-limit headers")
	}
	res := testcheck.As[[]any](t, "results", m["results"])
	if m["total"] != 7.0 || len(res) != 2 || testcheck.As[map[string]any](t, "properties", testcheck.As[map[string]any](t, "res element 0", testcheck.Index(t, "res", res, 0))["properties"])["age"] != "24" {
		t.Fatalf("search = %s", a.body)
	}
	after := testcheck.As[map[string]any](t, "next", testcheck.As[map[string]any](t, "paging", m["paging"])["next"])["after"]
	_, m = search(map[string]any{"filterGroups": []any{map[string]any{"filters": []any{
		map[string]any{"propertyName": "email", "operator": "CONTAINS_TOKEN", "value": "*@acme.com"},
		map[string]any{"propertyName": "age", "operator": "GT", "value": "10"},
	}}}, "sorts": []any{map[string]any{"propertyName": "age", "direction": "DESCENDING"}}, "properties": []string{"age"}, "limit": 10, "after": after})
	if len(testcheck.As[[]any](t, "results", m["results"])) != 5 || m["paging"] != nil {
		t.Fatalf("second page = %v", m)
	}
	// OR of groups, EQ is case-insensitive, HAS_PROPERTY / NEQ / LT.
	_, m = search(map[string]any{"filterGroups": []any{
		map[string]any{"filters": []any{map[string]any{"propertyName": "email", "operator": "EQ", "value": "U01@OTHER.com"}}},
		map[string]any{"filters": []any{map[string]any{"propertyName": "age", "operator": "LT", "value": "2"}, map[string]any{"propertyName": "age", "operator": "NEQ", "value": "1"}}},
	}})
	if m["total"] != 2.0 {
		t.Fatalf("OR search = %v", m)
	}
	_, m = search(map[string]any{"filterGroups": []any{map[string]any{"filters": []any{map[string]any{"propertyName": "nothing", "operator": "HAS_PROPERTY"}}}}})
	if m["total"] != 0.0 {
		t.Fatalf("HAS_PROPERTY search = %v", m)
	}
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/search", map[string]any{"limit": 201}), 400, "VALIDATION_ERROR")
	wantError(t, b.do("POST", "/crm/v3/objects/contacts/search", map[string]any{"query": strings.Repeat("x", SearchBodyMax)}), 400, "VALIDATION_ERROR")
}

func TestCommunicationPreferences(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	a := b.do("GET", "/communication-preferences/v3/definitions", nil)
	wantStatus(t, a, http.StatusOK)
	if defs := testcheck.As[[]any](t, "subscriptionDefinitions", a.json(t)["subscriptionDefinitions"]); len(defs) < 2 {
		t.Fatalf("definitions = %s", a.body)
	}
	a = b.do("POST", "/communication-preferences/v4/statuses/a@x.com", map[string]any{"subscriptionId": 1, "statusState": "SUBSCRIBED", "channel": "EMAIL", "legalBasis": "CONSENT_WITH_NOTICE"})
	wantStatus(t, a, http.StatusOK)
	if m := a.json(t); m["status"] != "SUBSCRIBED" || m["subscriptionId"] != 1.0 {
		t.Fatalf("v4 write = %s", a.body)
	}
	wantError(t, b.do("GET", "/communication-preferences/v4/statuses/a@x.com", nil), 400, "VALIDATION_ERROR")
	a = b.do("GET", "/communication-preferences/v4/statuses/A@x.com?channel=EMAIL&businessUnitId=0", nil)
	wantStatus(t, a, http.StatusOK)
	res := testcheck.As[[]any](t, "results", a.json(t)["results"])
	if testcheck.As[map[string]any](t, "res element 0", testcheck.Index(t, "res", res, 0))["status"] != "SUBSCRIBED" || testcheck.As[map[string]any](t, "res element 1", testcheck.Index(t, "res", res, 1))["status"] != "NOT_SPECIFIED" {
		t.Fatalf("v4 read = %s", a.body)
	}
	wantStatus(t, b.do("POST", "/communication-preferences/v3/unsubscribe", map[string]any{"emailAddress": "a@x.com", "subscriptionId": "1"}), http.StatusOK)
	a = b.do("GET", "/communication-preferences/v3/status/email/a@x.com", nil)
	wantStatus(t, a, http.StatusOK)
	m := a.json(t)
	if m["recipient"] != "a@x.com" || testcheck.As[map[string]any](t, "subscriptionStatuses", testcheck.Index(t, "subscriptionStatuses", testcheck.As[[]any](t, "subscriptionStatuses", m["subscriptionStatuses"]), 0))["status"] != "NOT_SUBSCRIBED" {
		t.Fatalf("v3 status = %s", a.body)
	}
	if got := b.srv.SubscriptionStatus("a@x.com", 1); got != "UNSUBSCRIBED" {
		t.Fatalf("SubscriptionStatus = %s", got)
	}
	wantStatus(t, b.do("POST", "/communication-preferences/v3/subscribe", map[string]any{"emailAddress": "a@x.com", "subscriptionId": 2}), http.StatusOK)
	wantError(t, b.do("POST", "/communication-preferences/v3/subscribe", map[string]any{"emailAddress": "a@x.com", "subscriptionId": 99}), 400, "VALIDATION_ERROR")
}
