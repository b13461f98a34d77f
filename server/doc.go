// Package server assembles a running hubsync service: the webhook receiver, the
// inbound worker (the design's SyncWorker), the outbound worker, the internal outbox relay, the cleanup
// schedule, the records API, the admin API and the metrics, behind one HTTP
// listener. `hubsync serve` is a thin wrapper around it; the demo and the
// end-to-end tests embed it.
//
// Build a Server with New(Config), start it with Start(ctx), and stop it with
// Stop(ctx) (graceful: stop accepting, finish or release in-flight leases) or by
// cancelling the context given to Start. The Server and every loop it runs
// (inbound.Worker, outbound.Worker, relay.Relay, the cleaner) share one
// lifecycle: a second Start returns ErrStarted, a Start after Stop ErrStopped
// (the same values as inbound.ErrStarted and the others), Stop is idempotent,
// and a Stop whose context ends first stops hard.
//
// The server builds the one HubSpot client every part calls through, and wires
// its response hook to budget.ObserveHubSpot: every response, the inbound
// worker's reads included, calibrates the shared budget. Every part can be switched off with a
// Disable… field, for split deployments (for example webhook receivers on one
// set of replicas and workers on another, all on one PostgreSQL or MySQL
// database).
//
// # The /api routes
//
// Every /api/… route is registered on one mux of its own (api in build),
// which mountAPI puts behind one guard: a bearer token of Config.APITokens
// (401 otherwise, counted in hubsync_auth_failures_total{area="api"} and
// logged at a bounded rate), and on writes a JSON Content-Type (415), no
// foreign Origin (403) and a declared body within APIMaxBodyBytes (413,
// before the body is read). Without tokens nothing under /api/ is mounted (404).
// To add an /api route, register it on that api mux in build, as
// mountRecordsAPI does, never on the outer mux: it is then guarded like the
// records API without further code.
//
// # The dashboard
//
// With an admin token, mountUI serves the operator dashboard of package
// server/ui at /admin/ui: a sign-in form exchanges the token for a session
// cookie, and every action carries a CSRF token. Its activity charts are fed
// where the Prometheus counters are counted (instruments.activity); its queue
// figures are the cached reading behind /metrics.
//
// # Metrics and traces
//
// GET /metrics serves the process's own registry; deploy/grafana and
// deploy/prometheus hold a dashboard and alert rules over it, and
// deploy_test.go holds both to that registry. Config.TracerProvider, when
// set, is handed to every part (see internal/eventtrace for how spans on
// either side of a queue are linked by event id), and the HubSpot client's
// transport traces and times each request; the library never builds an
// exporter.
//
// The listener's timeouts and header limit are Config.HTTP; /readyz tells an
// anonymous caller its status only, the reason goes to the log.
//
// Server is the composition root only: Config.Mapping drives the records API,
// the webhook receiver, the SyncWorker and the outbound worker; the operator
// functions behind the admin API (and the CLI and the demo) live in package
// ops; budget use is read by package budget. Config errors name Config fields;
// `hubsync serve` retells them with its flags and environment variables.
package server
