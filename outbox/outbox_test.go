package outbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hubsync/hubsync/internal/dbtest"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/store/sqlitestore"
)

func TestEnqueueTxStampsAndValidates(t *testing.T) {
	st, err := sqlitestore.New(dbtest.Migrated(t, store.SQLite).DB, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := outbox.WithSyncSource(context.Background(), "hubspot")
	payload, _ := outbox.Snapshot{ID: "r1", Fields: map[string]any{"a": 1}}.Marshal()
	ev := store.OutboundEvent{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", EventType: store.EventCreate, Payload: payload}
	res, err := outbox.EnqueueTx(ctx, st, st.DB(), ev)
	if err != nil || !res.Inserted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	got, err := st.Outbound().Get(context.Background(), res.ID)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := outbox.ParseSnapshot(got.Payload)
	if err != nil || !snap.SyncSourced("hubspot") {
		t.Fatalf("stored payload %s does not carry the sync source (%v)", got.Payload, err)
	}
	for _, bad := range []store.OutboundEvent{
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", Payload: []byte(`[1]`)},
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1"},
		{Destination: "salesforce", ObjectType: "contacts", RecordID: "r1", Payload: payload, OldPayload: []byte(`"x"`)},
	} {
		if _, err := outbox.EnqueueTx(ctx, st, st.DB(), bad); !errors.Is(err, outbox.ErrInvalidPayload) {
			t.Errorf("enqueue %+v: %v, want ErrInvalidPayload", bad, err)
		}
	}
}
