package hubspot

// WebhookEvent is one event of a HubSpot v3 webhook delivery. HubSpot POSTs a
// JSON array of up to MaxWebhookBatch events; order is not guaranteed (use
// OccurredAt), duplicates happen, and EventID alone is not guaranteed unique,
// so deduplicate on (SubscriptionType, ObjectID, OccurredAt, EventID, ...) as
// the caller sees fit.
//
// Fields that only some subscription types carry are tagged omitempty so an
// event re-encoded by the simulator looks like the one HubSpot sends.
type WebhookEvent struct {
	// EventID identifies the event; not guaranteed unique on its own.
	EventID int64 `json:"eventId"`
	// SubscriptionID is the id of the app's webhook subscription.
	SubscriptionID int64 `json:"subscriptionId"`
	// PortalID is the HubSpot account (hub) id.
	PortalID int64 `json:"portalId"`
	// AppID is the id of the app that owns the subscription.
	AppID int64 `json:"appId"`
	// OccurredAt is when the change happened, in epoch milliseconds.
	OccurredAt int64 `json:"occurredAt"`
	// SubscriptionType is e.g. "contact.propertyChange" or "deal.merge".
	SubscriptionType string `json:"subscriptionType"`
	// AttemptNumber counts delivery attempts of this event, from 0.
	AttemptNumber int `json:"attemptNumber"`
	// ObjectID is the id of the changed object.
	ObjectID int64 `json:"objectId,omitempty"`
	// PropertyName is set for propertyChange events.
	PropertyName string `json:"propertyName,omitempty"`
	// PropertyValue is the new value for propertyChange events.
	PropertyValue string `json:"propertyValue,omitempty"`
	// ChangeSource is e.g. "CRM_UI", "INTEGRATION", "API".
	ChangeSource string `json:"changeSource,omitempty"`
	// SourceID is, for integrations, the id of the writing app: compare it to
	// your own app id to recognise the echo of your own write.
	SourceID string `json:"sourceId,omitempty"`
	// ChangeFlag is sent on some creation/deletion events (e.g. "NEW", "DELETED").
	ChangeFlag string `json:"changeFlag,omitempty"`

	// PrimaryObjectID is, for merge events, the id of the surviving record.
	PrimaryObjectID int64 `json:"primaryObjectId,omitempty"`
	// MergedObjectIDs are, for merge events, the ids merged into the primary.
	MergedObjectIDs []int64 `json:"mergedObjectIds,omitempty"`
	// NewObjectID is, for merge events, the id of the resulting record when it
	// differs from the primary.
	NewObjectID int64 `json:"newObjectId,omitempty"`
	// NumberOfPropertiesMoved is, for merge events, how many properties moved.
	NumberOfPropertiesMoved int `json:"numberOfPropertiesMoved,omitempty"`

	// AssociationType is, for associationChange events, e.g. "CONTACT_TO_COMPANY".
	AssociationType string `json:"associationType,omitempty"`
	// FromObjectID is, for associationChange events, the source object.
	FromObjectID int64 `json:"fromObjectId,omitempty"`
	// ToObjectID is, for associationChange events, the target object.
	ToObjectID int64 `json:"toObjectId,omitempty"`
	// AssociationRemoved is true when the association was removed.
	AssociationRemoved bool `json:"associationRemoved,omitempty"`
	// IsPrimaryAssociation is true when the association is the primary one.
	IsPrimaryAssociation bool `json:"isPrimaryAssociation,omitempty"`
}

// MaxWebhookBatch is the most events HubSpot puts in one webhook request.
const MaxWebhookBatch = 100
