package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/mapping"
)

// mappingCheck runs `hubsync mapping check` through run against sim.
func mappingCheck(t *testing.T, sim *hubspotsim.Server, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append([]string{"mapping", "check", "-hubspot-api-base", sim.URL(), "-hubspot-access-token", hubspotsim.AccessTokenDefault}, args...)
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestMappingCheckDefaultIsClean(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	code, out, errOut := mappingCheck(t, sim)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, typ := range []string{"contacts", "companies", "deals"} {
		if !strings.Contains(out, typ+" (HubSpot "+typ+"): ok") {
			t.Errorf("output does not report %s ok:\n%s", typ, out)
		}
	}
}

func TestMappingCheckReportsProblems(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	path := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := os.WriteFile(path, []byte(`objects:
  contacts:
    hubspot_type: contacts
    webhook_name: contact
    id_property: firstname
    id_field: first_name
    fields:
      first_name: firstname
      shoe_size: {property: shoe_size, type: number}
      hubspot_id: {property: hs_object_id, type: number, direction: to_hubspot}
      created: {property: createdate, direction: from_hubspot}
      deals: {property: num_associated_deals, type: number}
  deals:
    id_property: hubsync_record_id
    id_field: $id
    fields:
      amount: amount
      name: dealname
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mappingCheck(t, sim, "-mapping", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"contacts (HubSpot contacts): 4 problem(s)",
		`field shoe_size: property "shoe_size" does not exist on contacts`,
		`field hubspot_id: property "hs_object_id" is read-only but the field syncs to_hubspot`,
		`field deals: property "num_associated_deals" is calculated but the field syncs both`,
		`id_property "firstname" does not have unique values`,
		"deals (HubSpot deals): 1 problem(s)",
		`field amount: type mismatch: local string, HubSpot property "amount" is number; set type: number`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Read-only mapped from_hubspot is fine; so is a matching type.
	for _, never := range []string{"field created", "field name", "field first_name"} {
		if strings.Contains(out, never) {
			t.Errorf("output reports %q, which is fine:\n%s", never, out)
		}
	}
	if !strings.Contains(errOut, "5 mapping problem(s)") {
		t.Errorf("stderr %q does not sum the problems", errOut)
	}

	// Once the portal has the property, that problem is gone.
	if err := sim.CreateProperty("contacts", hubspotsim.Property{Name: "shoe_size", Type: "number"}); err != nil {
		t.Fatal(err)
	}
	if _, out, _ = mappingCheck(t, sim, "-mapping", path); strings.Contains(out, "shoe_size") {
		t.Errorf("shoe_size still reported after creating it:\n%s", out)
	}
}

func TestMappingCheckMissingIDProperty(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	path := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := os.WriteFile(path, []byte("objects:\n  cars:\n    hubspot_type: 2-123456\n    id_property: car_ref\n    id_field: $id\n    fields: {plate: plate}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := mappingCheck(t, sim, "-mapping", path)
	if code != 1 || !strings.Contains(out, `id_property "car_ref" does not exist on 2-123456`) || !strings.Contains(out, `property "plate" does not exist`) {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestMappingCheckUsage(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"mapping"}, &stdout, &stderr); code != 2 {
		t.Errorf("hubsync mapping = %d, want 2 (usage)", code)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("objects:\n  x:\n    fields: {a: {property: b, direction: sideways}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := mappingCheck(t, sim, "-mapping", bad)
	if code != 1 || !strings.Contains(errOut, "line 3") || !strings.Contains(errOut, `unknown direction "sideways"`) {
		t.Errorf("invalid file: exit %d, stderr %q", code, errOut)
	}
	if os.Getenv("HUBSPOT_ACCESS_TOKEN") != "" {
		return // the token check below reads the environment
	}
	stderr.Reset()
	if code := run([]string{"mapping", "check", "-hubspot-api-base", sim.URL()}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "HUBSPOT_ACCESS_TOKEN is empty") {
		t.Errorf("no token: exit %d, stderr %q", code, stderr.String())
	}
}

// TestMappingCheckSubscriptions: a mapped subscription must be a
// subscription type of the portal; one of another business unit, which
// HubSpot does not list, is named as not checked.
func TestMappingCheckSubscriptions(t *testing.T) {
	t.Parallel()
	sim := hubspotsim.NewTest(t, hubspotsim.Config{})
	path := filepath.Join(t.TempDir(), "mapping.yaml")
	if err := os.WriteFile(path, []byte(`objects:
  contacts:
    fields: {email: email}
subscriptions:
  - {brand_id: acme, product_id: news, subscription_id: "01"}
  - {brand_id: acme, product_id: offers, subscription_id: 99}
  - {brand_id: zen, product_id: news, subscription_id: 4, business_unit_id: "5"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := mappingCheck(t, sim, "-mapping", path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"subscriptions: 1 problem(s)",
		"subscription_id 99 (brand acme, product offers) is not a subscription type of the portal; its types are 1 (Marketing Information), 2 (One to One), 3 (Customer Service Communication)",
		"not checked: subscription_id 4 (brand zen, product news) of business unit 5",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "subscription_id 01") {
		t.Errorf("subscription 01 (type 1) reported:\n%s", out)
	}

	ok := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(ok, []byte("objects:\n  contacts:\n    fields: {email: email}\nsubscriptions:\n  - {brand_id: acme, product_id: news, subscription_id: 2, business_unit_id: \"0\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := mappingCheck(t, sim, "-mapping", ok); code != 0 || !strings.Contains(out, "subscriptions: ok, 1 mapped") {
		t.Fatalf("a mapped portal type: exit %d\n%s%s", code, out, errOut)
	}
}

func TestCheckSubscriptions(t *testing.T) {
	defs := []hubspot.SubscriptionDefinition{
		{ID: "1", Name: "News", IsActive: true, BusinessUnitID: "0"},
		{ID: "2", Name: "Old", IsActive: false, BusinessUnitID: "0"},
		{ID: "3", Name: "Zen news", IsActive: true, BusinessUnitID: "7"},
	}
	subs := []mapping.Subscription{
		{BrandID: "a", ProductID: "p", SubscriptionID: "1"},
		{BrandID: "a", ProductID: "q", SubscriptionID: "2"},
		{BrandID: "a", ProductID: "r", SubscriptionID: "3"},
		{BrandID: "z", ProductID: "r", SubscriptionID: "3", BusinessUnitID: "7"},
		{BrandID: "b", ProductID: "p", SubscriptionID: "1", BusinessUnitID: "7"},
	}
	problems, unchecked := checkSubscriptions(subs, defs)
	want := []string{
		`subscription_id 2 (brand a, product q) is the inactive type "Old"; activate it in HubSpot or map another`,
		"subscription_id 3 (brand a, product r) belongs to business unit 7, not 0 (the default); set business_unit_id: 7",
		"subscription_id 1 (brand b, product p) belongs to business unit 0, not 7; set business_unit_id: 0",
	}
	if !slices.Equal(problems, want) || len(unchecked) != 0 {
		t.Fatalf("problems:\n%s\nunchecked %v; want:\n%s", strings.Join(problems, "\n"), unchecked, strings.Join(want, "\n"))
	}
}
