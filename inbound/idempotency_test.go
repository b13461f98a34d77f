package inbound

import (
	"testing"
)

// TestIdempotencyKeyFields checks that every field that tells two changes
// apart is part of the idempotency key: changing any one of them gives another
// key, distinct from every other variant's, and the fields are delimited so
// that moving text from one field to the next changes the key too.
func TestIdempotencyKeyFields(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	yes, no := true, false
	base := Event{
		PortalID: "62515", SubscriptionType: "contact.propertyChange", ObjectID: "5", EventID: "9",
		OccurredAt: 1700000000000, PropertyName: "phone", PropertyValue: str("1"),
		ChangeSource: "CRM_UI", SourceID: "userId:7",
		PrimaryObjectID: "5", MergedObjectIDs: []string{"6", "7"}, NewObjectID: "8",
		AssociationType: "CONTACT_TO_COMPANY", FromObjectID: "5", ToObjectID: "11", AssociationRemoved: &no,
	}
	variants := []struct {
		name   string
		change func(e *Event)
	}{
		{"portalId", func(e *Event) { e.PortalID = "62516" }},
		{"subscriptionType", func(e *Event) { e.SubscriptionType = "contact.creation" }},
		{"objectId", func(e *Event) { e.ObjectID = "6" }},
		{"eventId", func(e *Event) { e.EventID = "10" }},
		{"occurredAt", func(e *Event) { e.OccurredAt++ }},
		{"propertyName", func(e *Event) { e.PropertyName = "mobilephone" }},
		{"propertyValue", func(e *Event) { e.PropertyValue = str("2") }},
		{"propertyValue cleared", func(e *Event) { e.PropertyValue = str("") }},
		{"propertyValue absent", func(e *Event) { e.PropertyValue = nil }},
		{"changeSource", func(e *Event) { e.ChangeSource = "INTEGRATION" }},
		{"sourceId", func(e *Event) { e.SourceID = "userId:8" }},
		{"primaryObjectId", func(e *Event) { e.PrimaryObjectID = "6" }},
		{"mergedObjectIds", func(e *Event) { e.MergedObjectIDs = []string{"6", "9"} }},
		{"mergedObjectIds shorter", func(e *Event) { e.MergedObjectIDs = []string{"6"} }},
		{"newObjectId", func(e *Event) { e.NewObjectID = "9" }},
		{"associationType", func(e *Event) { e.AssociationType = "CONTACT_TO_DEAL" }},
		{"fromObjectId", func(e *Event) { e.FromObjectID = "12" }},
		{"toObjectId", func(e *Event) { e.ToObjectID = "12" }},
		{"associationRemoved true", func(e *Event) { e.AssociationRemoved = &yes }},
		{"associationRemoved absent", func(e *Event) { e.AssociationRemoved = nil }},
		// Text moved across a field boundary is another change.
		{"changeSource|sourceId boundary", func(e *Event) { e.ChangeSource, e.SourceID = "CRM_UIuserId:7", "" }},
		{"propertyName|propertyValue boundary", func(e *Event) { e.PropertyName, e.PropertyValue = "phone1", str("") }},
		{"fromObjectId|toObjectId boundary", func(e *Event) { e.FromObjectID, e.ToObjectID = "51", "1" }},
	}
	k0 := IdempotencyKey(base)
	seen := map[string]string{k0: "the base event"}
	for _, v := range variants {
		e := base
		e.MergedObjectIDs = append([]string(nil), base.MergedObjectIDs...)
		v.change(&e)
		k := IdempotencyKey(e)
		if other, dup := seen[k]; dup {
			t.Errorf("changing %s gives the same idempotency key as %s", v.name, other)
			continue
		}
		seen[k] = "changing " + v.name
	}

	// What does not tell changes apart leaves the key alone.
	same := base
	same.MergedObjectIDs = []string{"7", "6"}
	if k := IdempotencyKey(same); k != k0 {
		t.Errorf("merged ids in another order changed the key: %s, want %s", k, k0)
	}
	if IdempotencyKey(base) != k0 {
		t.Error("IdempotencyKey is not deterministic")
	}
}
