package outbox_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/outbox"
	"github.com/hubsync/hubsync/store"
)

// An application that owns its schema writes its own row and the outbound event
// in one transaction: both commit, or neither does.
func ExampleEnqueueTx() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "hubsync-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := hubsync.Open(ctx, "sqlite:"+filepath.Join(dir, "app.db"), store.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := hubsync.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.SQL.ExecContext(ctx, "CREATE TABLE contact (id TEXT PRIMARY KEY, email TEXT)"); err != nil {
		log.Fatal(err)
	}

	save := func(ctx context.Context, id, email string) {
		tx, err := db.SQL.BeginTx(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "INSERT INTO contact (id, email) VALUES (?, ?)", id, email); err != nil {
			log.Fatal(err)
		}
		payload, err := outbox.Snapshot{ID: id, Version: 1, Fields: map[string]any{"email": email}}.Marshal()
		if err != nil {
			log.Fatal(err)
		}
		res, err := outbox.EnqueueTx(ctx, db.Store, tx, store.OutboundEvent{
			Destination: "hubspot", ObjectType: "contacts", RecordID: id,
			EventType: store.EventCreate, Payload: payload,
		})
		if err != nil {
			log.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s enqueued: %v\n", id, res.Inserted)
	}

	save(ctx, "c1", "ann@example.com")
	// A change that came from HubSpot's own sync is not sent back to HubSpot.
	save(outbox.WithSyncSource(ctx, "hubspot"), "c2", "bob@example.com")

	pending, err := db.Store.Outbound().GetPending(ctx, "hubspot", 10)
	if err != nil {
		log.Fatal(err)
	}
	for _, ev := range pending {
		fmt.Println("pending for hubspot:", ev.EventType, ev.RecordID)
	}
	// Output:
	// c1 enqueued: true
	// c2 enqueued: false
	// pending for hubspot: create c1
}
