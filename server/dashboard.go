package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	hubsync "github.com/hubsync/hubsync"
	"github.com/hubsync/hubsync/budget"
	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/links"
	"github.com/hubsync/hubsync/ops"
	"github.com/hubsync/hubsync/records"
	"github.com/hubsync/hubsync/server/ui"
	"github.com/hubsync/hubsync/store"
)

// mountUI serves the operator dashboard at /admin/ui behind the admin token
// (a sign-in form exchanging it for a session cookie). Without an admin token
// it is not mounted, like the admin API. bud and client are nil when no part
// of this process calls HubSpot: the record page then cannot read HubSpot's
// side.
func (s *Server) mountUI(mux *http.ServeMux, db *hubsync.DB, st store.Store, recs *records.Service, lk *links.Links, client *hubspot.Client, bud budget.Budget) error {
	cfg := s.cfg
	if cfg.AdminToken == "" {
		return nil
	}
	// A budget of its own, only to read the shared window: reading never
	// reserves, so a webhook-only replica can show it too.
	reader, err := budget.NewSQL(db.SQL, db.Dialect, budget.Config{Limit: cfg.RateLimit, DailyLimit: cfg.DailyLimit, TimeZone: s.zone})
	if err != nil {
		return fmt.Errorf("RateLimit/DailyLimit: %w", err)
	}
	var origin string
	if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
		origin = u.Scheme + "://" + u.Host
	}
	d, err := ui.New(ui.Config{
		Token: cfg.AdminToken, Store: st, Records: recs, Links: lk, Mapping: cfg.Mapping,
		Metrics: func(context.Context) (ops.Metrics, error) { return s.in.stats.load() },
		HubSpot: client, Budget: bud, BudgetKey: cfg.BudgetKey, BudgetUse: reader.WindowUse,
		Activity: s.in.activity, TrustedProxies: cfg.TrustedProxies, PublicOrigin: origin,
		OnAuthFailure: func(r *http.Request) { s.failures.record(authAreaAdmin, r) },
		Logger:        s.log,
	})
	if err != nil {
		return err
	}
	d.Register(mux)
	return nil
}
