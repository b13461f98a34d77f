package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
)

func init() {
	register("mapping", command{summary: "check the mapping against the portal's properties (mapping check)", run: runMapping})
}

func runMapping(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: hubsync mapping check [flags]")
		return fmt.Errorf("want the subcommand check: %w", errUsage)
	}
	fs := newFlagSet("mapping check", stderr)
	e := &envFlags{fs: fs}
	var path, apiBase, token string
	e.string(&path, "mapping", "HUBSYNC_MAPPING", "", "YAML mapping file; empty: the default mapping")
	e.string(&apiBase, "hubspot-api-base", "HUBSPOT_API_BASE", hubspot.BaseURLDefault, "HubSpot API base URL")
	e.secret(&token, "hubspot-access-token", "HUBSPOT_ACCESS_TOKEN", "private app access token (needs the CRM schema read scopes)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync mapping check [flags]\n\nReads the portal's property definitions and reports, per mapped object,\nproperties that do not exist, read-only properties mapped to_hubspot,\ntype mismatches and an id_property without unique values; and, when the\nmapping maps subscriptions, subscription ids that are not an active\nsubscription type of the portal or of another business unit. Exits 1 on any.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if err := e.resolve(); err != nil {
		return err
	}
	if token == "" {
		return fmt.Errorf("HUBSPOT_ACCESS_TOKEN is empty; set it to your private app's access token")
	}
	m := mapping.Default()
	if path != "" {
		var err error
		if m, err = mapping.Load(path); err != nil {
			return fmt.Errorf("HUBSYNC_MAPPING/-mapping: %w", err)
		}
	}
	client, err := hubspot.NewClient(hubspot.Config{BaseURL: apiBase, AccessToken: token})
	if err != nil {
		return fmt.Errorf("HUBSPOT_API_BASE/HUBSPOT_ACCESS_TOKEN: %w", err)
	}
	total := 0
	for _, typ := range m.ObjectTypes() {
		o, _ := m.Lookup(typ)
		props, err := client.GetProperties(ctx, hubspot.ObjectType(o.HubSpotType))
		if err != nil {
			return fmt.Errorf("read the properties of %s (HubSpot %s): %w", typ, o.HubSpotType, err)
		}
		problems := checkObject(o, props)
		total += len(problems)
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "%s (HubSpot %s): ok, %d fields\n", typ, o.HubSpotType, len(o.Fields))
			continue
		}
		fmt.Fprintf(stdout, "%s (HubSpot %s): %d problem(s)\n", typ, o.HubSpotType, len(problems))
		for _, p := range problems {
			fmt.Fprintf(stdout, "  - %s\n", p)
		}
	}
	if subs := m.Subscriptions(); len(subs) > 0 {
		defs, err := client.SubscriptionDefinitions(ctx)
		if err != nil {
			return fmt.Errorf("read the portal's subscription types (the private app needs the communication_preferences.read scope): %w", err)
		}
		problems, unchecked := checkSubscriptions(subs, defs)
		total += len(problems)
		if len(problems) == 0 {
			fmt.Fprintf(stdout, "subscriptions: ok, %d mapped\n", len(subs)-len(unchecked))
		} else {
			fmt.Fprintf(stdout, "subscriptions: %d problem(s)\n", len(problems))
			for _, p := range problems {
				fmt.Fprintf(stdout, "  - %s\n", p)
			}
		}
		for _, u := range unchecked {
			fmt.Fprintf(stdout, "  - not checked: %s\n", u)
		}
	}
	if total > 0 {
		return fmt.Errorf("%d mapping problem(s); fix the portal or the mapping file", total)
	}
	return nil
}

// checkSubscriptions checks each mapped subscription against the portal's
// subscription types: it must be one of them, active, and of the business
// unit the mapping names. The types HubSpot lists are its default unit's,
// so a subscription mapped to another unit and not among them is returned
// as unchecked rather than as a problem.
func checkSubscriptions(subs []mapping.Subscription, defs []hubspot.SubscriptionDefinition) (problems, unchecked []string) {
	byID := map[string]hubspot.SubscriptionDefinition{}
	var known []string
	for _, d := range defs {
		byID[trimZeros(d.ID)] = d
		known = append(known, fmt.Sprintf("%s (%s)", d.ID, d.Name))
	}
	for _, sub := range subs {
		what := fmt.Sprintf("subscription_id %s (brand %s, product %s)", sub.SubscriptionID, sub.BrandID, sub.ProductID)
		unit := trimZeros(sub.BusinessUnitID)
		d, ok := byID[trimZeros(sub.SubscriptionID)]
		switch {
		case !ok && unit != "0":
			unchecked = append(unchecked, fmt.Sprintf("%s of business unit %s: HubSpot lists its default unit's subscription types only", what, sub.BusinessUnitID))
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is not a subscription type of the portal; its types are %s", what, strings.Join(known, ", ")))
		case !d.IsActive:
			problems = append(problems, fmt.Sprintf("%s is the inactive type %q; activate it in HubSpot or map another", what, d.Name))
		case trimZeros(d.BusinessUnitID) != unit:
			problems = append(problems, fmt.Sprintf("%s belongs to business unit %s, not %s; set business_unit_id: %s", what, cmp.Or(d.BusinessUnitID, "0"), cmp.Or(sub.BusinessUnitID, "0 (the default)"), cmp.Or(d.BusinessUnitID, "0")))
		}
	}
	return problems, unchecked
}

// trimZeros is a numeric HubSpot id without leading zeros ("0" for "" and "0").
func trimZeros(id string) string {
	if t := strings.TrimLeft(id, "0"); t != "" {
		return t
	}
	return "0"
}

// compatibleTypes lists, per local field type, the HubSpot property types a
// value round-trips through: a local number only through a HubSpot number
// (a string property would hand back text the field cannot hold), a bool
// through bool or a true/false enumeration, a string through any textual type.
var compatibleTypes = map[mapping.FieldType][]string{
	mapping.String: {hubspot.PropertyString, hubspot.PropertyEnumeration, hubspot.PropertyDate, hubspot.PropertyDateTime},
	mapping.Number: {hubspot.PropertyNumber},
	mapping.Bool:   {hubspot.PropertyBool},
}

// typeFits reports whether local type t can sync with property p.
func typeFits(t mapping.FieldType, p hubspot.Property) bool {
	if t == "" {
		t = mapping.String
	}
	if slices.Contains(compatibleTypes[t], p.Type) {
		return true
	}
	if t == mapping.Bool && p.Type == hubspot.PropertyEnumeration && len(p.Options) == 2 {
		vals := []string{p.Options[0].Value, p.Options[1].Value}
		slices.Sort(vals)
		return vals[0] == "false" && vals[1] == "true"
	}
	return false
}

// suggestedType is the local type to write for a HubSpot property type.
func suggestedType(p hubspot.Property) mapping.FieldType {
	switch p.Type {
	case hubspot.PropertyNumber:
		return mapping.Number
	case hubspot.PropertyBool:
		return mapping.Bool
	}
	return mapping.String
}

// checkObject compares one object's mapping with the portal's definitions.
func checkObject(o mapping.Object, defs []hubspot.Property) []string {
	byName := make(map[string]hubspot.Property, len(defs))
	for _, d := range defs {
		byName[d.Name] = d
	}
	var problems []string
	for _, f := range o.Fields {
		p, ok := byName[f.HubSpot]
		if !ok {
			problems = append(problems, fmt.Sprintf("field %s: property %q does not exist on %s; create it in HubSpot or map the field to an existing property", f.Local, f.HubSpot, o.HubSpotType))
			continue
		}
		if f.Direction != mapping.FromHubSpot && !p.Writable() {
			why := "read-only"
			if p.Calculated {
				why = "calculated"
			}
			dir := string(f.Direction)
			if dir == "" {
				dir = "both"
			}
			problems = append(problems, fmt.Sprintf("field %s: property %q is %s but the field syncs %s; set direction: from_hubspot", f.Local, f.HubSpot, why, dir))
		}
		if !typeFits(f.Type, p) {
			local := f.Type
			if local == "" {
				local = mapping.String
			}
			problems = append(problems, fmt.Sprintf("field %s: type mismatch: local %s, HubSpot property %q is %s; set type: %s or map another property", f.Local, local, f.HubSpot, p.Type, suggestedType(p)))
		}
	}
	if o.IDProperty != "" {
		p, ok := byName[o.IDProperty]
		switch {
		case !ok:
			fix := "create it"
			if o.IDFromRecordID() {
				fix = "create it as a single-line text property"
			}
			problems = append(problems, fmt.Sprintf("id_property %q does not exist on %s; %s with \"Require unique values\" enabled", o.IDProperty, o.HubSpotType, fix))
		case !p.HasUniqueValue:
			problems = append(problems, fmt.Sprintf("id_property %q does not have unique values, so HubSpot cannot upsert by it; use a unique property (unique values can only be set when a property is created)", o.IDProperty))
		case o.IDFromRecordID() && !p.Writable():
			problems = append(problems, fmt.Sprintf("id_property %q is read-only, but it must be written with the local record id; use a writable unique property", o.IDProperty))
		}
	}
	return problems
}
