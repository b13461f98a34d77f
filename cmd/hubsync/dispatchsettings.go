package main

import (
	"fmt"

	"github.com/hubsync/hubsync/qstash"
	"github.com/hubsync/hubsync/server"
)

// dispatchFlags binds the settings of the dispatch mode (HUBSYNC_DISPATCH)
// and of QStash's push dispatch, and the reconciliation cron's secret.
func dispatchFlags(e *envFlags, cfg *server.Config) {
	e.string(&cfg.Dispatch, "dispatch", "HUBSYNC_DISPATCH", server.DispatchPoll, "how outbound events reach the worker: poll (workers poll the database) or qstash (pushed through QStash to POST /qstash/hubspot)")
	e.string(&cfg.QStashURL, "qstash-url", "QSTASH_URL", "", "QStash's base URL (qstash mode), e.g. the emulator of hubsync sim -qstash")
	e.secret(&cfg.QStashToken, "qstash-token", "QSTASH_TOKEN", "QStash token (qstash mode)")
	e.secret(&cfg.QStashCurrentSigningKey, "qstash-current-signing-key", "QSTASH_CURRENT_SIGNING_KEY", "QStash's current signing key, verifies deliveries (qstash mode)")
	e.secret(&cfg.QStashNextSigningKey, "qstash-next-signing-key", "QSTASH_NEXT_SIGNING_KEY", "QStash's next signing key, also accepted (qstash mode)")
	e.string(&cfg.WorkerURL, "worker-url", "HUBSYNC_WORKER_URL", "", "public URL QStash delivers to, exactly as signed, e.g. https://crm.example.com/qstash/hubspot (qstash mode)")
	e.string(&cfg.FlowControlKey, "flow-control-key", "HUBSYNC_FLOW_CONTROL_KEY", "", "QStash flow-control key shared by all deliveries (default: the budget key with ':' as '-')")
	e.int(&cfg.FlowControlRate, "flow-control-rate", "HUBSYNC_FLOW_CONTROL_RATE", 0, "QStash deliveries per flow-control period (default: 80% of the HubSpot rate limit over the period)")
	e.duration(&cfg.FlowControlPeriod, "flow-control-period", "HUBSYNC_FLOW_CONTROL_PERIOD", server.FlowControlPeriodDefault, "QStash flow-control period (whole seconds)")
	e.int(&cfg.FlowControlParallelism, "flow-control-parallelism", "HUBSYNC_FLOW_CONTROL_PARALLELISM", server.FlowControlParallelismDefault, "QStash deliveries at once")
	e.int(&cfg.QStashRetries, "qstash-retries", "HUBSYNC_QSTASH_RETRIES", qstash.RetriesDefault, "Upstash-Retries of each message: QStash delivers at most 1 + this many times (0: once)")
	e.string(&cfg.QStashRetryDelay, "qstash-retry-delay", "HUBSYNC_QSTASH_RETRY_DELAY", "", "Upstash-Retry-Delay, milliseconds before a retry as an expression, e.g. \"pow(2, retried) * 1000\"; empty: QStash's default backoff")
	e.secret(&cfg.CronSecret, "cron-secret", "CRON_SECRET", "bearer secret of GET /api/cron/reconcile, at least 16 characters; empty turns it off")
}

// finishDispatch turns the flags' values into server.Config's where they
// differ: -qstash-retries 0 is no retry, which server.Config (whose zero
// value is the default) spells as a negative number.
func finishDispatch(cfg *server.Config) error {
	switch {
	case cfg.QStashRetries < 0:
		return fmt.Errorf("HUBSYNC_QSTASH_RETRIES/-qstash-retries is %d; use 0 (each message delivered once) or a positive number of retries", cfg.QStashRetries)
	case cfg.QStashRetries == 0:
		cfg.QStashRetries = -1
	}
	return nil
}
