package server

import (
	"log/slog"
	"net/http"

	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
	"github.com/hubsync/hubsync/subscriptions"
)

// subscriptionHandlers returns the outbound handlers of subscription
// requests, for outbound.Config.Handlers.
func subscriptionHandlers(st store.Store, hs subscriptions.HubSpot, m *mapping.Set, log *slog.Logger) map[string]outbound.Handler {
	return map[string]outbound.Handler{
		subscriptions.ObjectType: subscriptions.NewPusher(subscriptions.NewStore(st), hs, m, log),
	}
}

// mountSubscriptionsAPI serves /api/subscription-requests; an accepted
// request wakes the local workers. It sits under /api/ with the records
// API, behind whatever guards /api/.
func (s *Server) mountSubscriptionsAPI(api *http.ServeMux, st store.Store, wake []notifier) error {
	h, err := subscriptions.NewHandler(subscriptions.HandlerConfig{
		Store: subscriptions.NewStore(st), Mapping: s.cfg.Mapping, Logger: s.log,
		OnAccept: func() {
			for _, n := range wake {
				n.Notify()
			}
		},
	})
	if err != nil {
		return err
	}
	api.Handle(subscriptions.RequestsPath, h)
	api.Handle(subscriptions.RequestsPath+"/", h)
	return nil
}
