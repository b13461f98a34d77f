package inbound_test

import (
	"context"
	"log"
	"net/http"

	"github.com/hubsync/hubsync/apply"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/inbound"
	"github.com/hubsync/hubsync/store"
)

// Example wires the receiver and the worker: the receiver stores deliveries
// and wakes the worker, which applies them through the application's Applier.
func Example() {
	var (
		st      store.Store   // e.g. from hubsync.Open
		applier apply.Applier // e.g. the records service
	)
	if st == nil {
		return // a sketch: open a real store and applier here
	}
	client, err := hubspot.NewClient(hubspot.Config{AccessToken: "pat-..."})
	if err != nil {
		log.Fatal(err)
	}
	worker, err := inbound.NewWorker(inbound.WorkerConfig{
		Store: st.Inbound(), Applier: applier, HubSpot: client, AppID: "1000",
	})
	if err != nil {
		log.Fatal(err)
	}
	receiver, err := inbound.NewReceiver(inbound.ReceiverConfig{
		Store: st.Inbound(), ClientSecret: "client-secret", PublicURL: "https://crm.example.com", AppID: "1000",
		MaxConcurrentStores: 1, // SQLite
		// Echoes of our own writes are stored processed: only pending rows
		// are work for the worker.
		Hooks: inbound.ReceiverHooks{OnStored: func(pending, _ int) {
			if pending > 0 {
				worker.Notify()
			}
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if err := worker.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer worker.Stop(ctx)
	http.Handle("POST "+inbound.WebhookPath, receiver)
	// Output:
}
