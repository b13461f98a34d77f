package main

import (
	"regexp"
	"strings"
)

// configNames maps the Config fields that library errors name (server.Config,
// ops.CleanupConfig) to what sets them here: an environment variable, or for
// the Disable… switches the flag that turns a part off. Environment variable
// names live in this package only.
var configNames = map[string]string{
	"DatabaseURL":           "HUBSYNC_DATABASE_URL",
	"Addr":                  "HUBSYNC_ADDR",
	"MetricsAddr":           "HUBSYNC_METRICS_ADDR",
	"PublicURL":             "HUBSYNC_PUBLIC_URL",
	"HubSpotAPIBase":        "HUBSPOT_API_BASE",
	"HubSpotAccessToken":    "HUBSPOT_ACCESS_TOKEN",
	"HubSpotClientSecret":   "HUBSPOT_CLIENT_SECRET",
	"HubSpotAppID":          "HUBSPOT_APP_ID",
	"HubSpotPortalID":       "HUBSPOT_PORTAL_ID",
	"AdminToken":            "HUBSYNC_ADMIN_TOKEN",
	"APITokens":             "HUBSYNC_API_TOKEN",
	"RateLimit":             "HUBSYNC_HUBSPOT_RATE_LIMIT",
	"DailyLimit":            "HUBSYNC_HUBSPOT_DAILY_LIMIT",
	"HubSpotTimeZone":       "HUBSYNC_HUBSPOT_TIME_ZONE",
	"BudgetCallLead":        "HUBSYNC_BUDGET_CALL_LEAD",
	"BudgetRetrySpread":     "HUBSYNC_BUDGET_RETRY_SPREAD",
	"OutboundFillWait":      "HUBSYNC_OUTBOUND_FILL_WAIT",
	"OutboundConcurrency":   "HUBSYNC_OUTBOUND_CONCURRENCY",
	"OutboundHold":          "HUBSYNC_OUTBOUND_HOLD",
	"BudgetPace":            "HUBSYNC_BUDGET_PACE",
	"OutboundBudgetAhead":   "HUBSYNC_OUTBOUND_BUDGET_AHEAD",
	"SyncApplyConcurrency":  "HUBSYNC_SYNC_APPLY_CONCURRENCY",
	"InboundRetention":      "HUBSYNC_INBOUND_RETENTION",
	"OutboundRetention":     "HUBSYNC_OUTBOUND_RETENTION",
	"InternalRetention":     "HUBSYNC_INTERNAL_RETENTION",
	"IdempotencyRetention":  "HUBSYNC_IDEMPOTENCY_RETENTION",
	"SubscriptionRetention": "HUBSYNC_SUBSCRIPTION_RETENTION",
	"DiscardedRetention":    "HUBSYNC_DISCARDED_RETENTION",
	"CleanupInterval":       "HUBSYNC_CLEANUP_INTERVAL",
	"DrainTimeout":          "HUBSYNC_DRAIN_TIMEOUT",
	"Drift.Interval":        "HUBSYNC_DRIFT_INTERVAL",
	"Drift.BudgetShare":     "HUBSYNC_DRIFT_BUDGET_SHARE",
	"Drift.PageSize":        "HUBSYNC_DRIFT_PAGE_SIZE",
	"Drift.Policy":          "HUBSYNC_DRIFT_POLICY",
	"Drift.MaxDifferences":  "HUBSYNC_DRIFT_MAX_DIFFERENCES",
	"DisableWebhooks":       "-webhooks=false",
	"DisableSyncWorker":     "-sync-worker=false",
	"DisableOutboundWorker": "-outbound-worker=false",
	"DisableRelay":          "-relay=false",
	"DisableCleanup":        "-cleanup=false",
	"DisableAPI":            "-api=false",

	"Dispatch":                "HUBSYNC_DISPATCH",
	"QStashURL":               "QSTASH_URL",
	"QStashToken":             "QSTASH_TOKEN",
	"QStashCurrentSigningKey": "QSTASH_CURRENT_SIGNING_KEY",
	"QStashNextSigningKey":    "QSTASH_NEXT_SIGNING_KEY",
	"WorkerURL":               "HUBSYNC_WORKER_URL",
	"FlowControlKey":          "HUBSYNC_FLOW_CONTROL_KEY",
	"FlowControlRate":         "HUBSYNC_FLOW_CONTROL_RATE",
	"FlowControlPeriod":       "HUBSYNC_FLOW_CONTROL_PERIOD",
	"FlowControlParallelism":  "HUBSYNC_FLOW_CONTROL_PARALLELISM",
	"CronSecret":              "CRON_SECRET",
	"QStashRetries":           "HUBSYNC_QSTASH_RETRIES",
	"QStashRetryDelay":        "HUBSYNC_QSTASH_RETRY_DELAY",
}

var configNameRE = func() *regexp.Regexp {
	names := make([]string, 0, len(configNames))
	for f := range configNames {
		names = append(names, regexp.QuoteMeta(f))
	}
	return regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
}()

// settingError is a library error retold with the settings of this program.
type settingError struct {
	msg string
	err error
}

func (e *settingError) Error() string { return e.msg }
func (e *settingError) Unwrap() error { return e.err }

// namingSettings rewrites the Config field names in err's message to the
// environment variables and flags that set them; errors.Is and errors.As still
// see err.
func namingSettings(err error) error {
	if err == nil {
		return nil
	}
	msg := configNameRE.ReplaceAllStringFunc(err.Error(), func(f string) string { return configNames[f] })
	if msg == err.Error() {
		return err
	}
	return &settingError{msg: msg, err: err}
}
