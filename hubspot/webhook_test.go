package hubspot

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestWebhookEventJSON(t *testing.T) {
	t.Parallel()
	body := `[
	 {"eventId":100,"subscriptionId":200,"portalId":300,"appId":400,"occurredAt":1700000000123,"subscriptionType":"contact.propertyChange","attemptNumber":0,"objectId":123,"changeSource":"INTEGRATION","sourceId":"400","propertyName":"email","propertyValue":"a@b.com","changeFlag":"NEW"},
	 {"eventId":101,"subscriptionId":201,"portalId":300,"appId":400,"occurredAt":1700000000124,"subscriptionType":"contact.merge","attemptNumber":2,"objectId":5,"changeSource":"CRM_UI","primaryObjectId":5,"mergedObjectIds":[6,7],"newObjectId":8,"numberOfPropertiesMoved":3},
	 {"eventId":102,"subscriptionId":202,"portalId":300,"appId":400,"occurredAt":1700000000125,"subscriptionType":"contact.associationChange","attemptNumber":1,"changeSource":"USER","associationType":"CONTACT_TO_COMPANY","fromObjectId":1,"toObjectId":2,"associationRemoved":true,"isPrimaryAssociation":true}
	]`
	var events []WebhookEvent
	if err := json.Unmarshal([]byte(body), &events); err != nil {
		t.Fatal(err)
	}
	want := []WebhookEvent{
		{EventID: 100, SubscriptionID: 200, PortalID: 300, AppID: 400, OccurredAt: 1700000000123, SubscriptionType: "contact.propertyChange", ObjectID: 123, ChangeSource: "INTEGRATION", SourceID: "400", PropertyName: "email", PropertyValue: "a@b.com", ChangeFlag: "NEW"},
		{EventID: 101, SubscriptionID: 201, PortalID: 300, AppID: 400, OccurredAt: 1700000000124, SubscriptionType: "contact.merge", AttemptNumber: 2, ObjectID: 5, ChangeSource: "CRM_UI", PrimaryObjectID: 5, MergedObjectIDs: []int64{6, 7}, NewObjectID: 8, NumberOfPropertiesMoved: 3},
		{EventID: 102, SubscriptionID: 202, PortalID: 300, AppID: 400, OccurredAt: 1700000000125, SubscriptionType: "contact.associationChange", AttemptNumber: 1, ChangeSource: "USER", AssociationType: "CONTACT_TO_COMPANY", FromObjectID: 1, ToObjectID: 2, AssociationRemoved: true, IsPrimaryAssociation: true},
	}
	if !reflect.DeepEqual(events, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", events, want)
	}
	// Encoding omits the fields other subscription types carry.
	out, err := json.Marshal(events[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"mergedObjectIds", "associationType", "primaryObjectId", "fromObjectId"} {
		if strings.Contains(string(out), absent) {
			t.Errorf("encoded propertyChange event contains %s: %s", absent, out)
		}
	}
	for _, present := range []string{`"eventId":100`, `"attemptNumber":0`, `"sourceId":"400"`} {
		if !strings.Contains(string(out), present) {
			t.Errorf("encoded event lacks %s: %s", present, out)
		}
	}
}
