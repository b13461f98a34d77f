package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func init() {
	register("sim", command{summary: "run the HubSpot simulator until signalled", run: runSim})
}

// simAddrDefault keeps the simulator off serve's default port.
const simAddrDefault = "127.0.0.1:8090"

// simSettings is what `hubsync sim` runs with.
type simSettings struct {
	addr    string
	cfg     hubspotsim.Config
	verbose bool
	// tokenShown and secretShown are printed for serve to use: the values
	// when they are the simulator's fakes, the variable's name otherwise, so
	// a real token from the environment is never echoed.
	tokenShown, secretShown string
}

// parseSim reads the flags and the environment serve reads too
// (HUBSPOT_ACCESS_TOKEN, HUBSPOT_CLIENT_SECRET, HUBSPOT_APP_ID), so one .env
// configures both; a flag given on the command line wins.
func parseSim(args []string, stderr io.Writer) (simSettings, error) {
	fs := newFlagSet("sim", stderr)
	e := &envFlags{fs: fs}
	var st simSettings
	fs.StringVar(&st.addr, "addr", simAddrDefault, "listen address (port 0: any free port)")
	var token, secret, appIDText string
	e.secret(&token, "token", "HUBSPOT_ACCESS_TOKEN", "the only access token accepted; default "+hubspotsim.AccessTokenDefault)
	e.secret(&secret, "client-secret", "HUBSPOT_CLIENT_SECRET", "client secret that signs webhooks; default "+hubspotsim.ClientSecretDefault)
	e.string(&appIDText, "app-id", "HUBSPOT_APP_ID", strconv.FormatInt(hubspotsim.AppIDDefault, 10), "app id; API writes produce webhook events with this sourceId")
	webhookURL := fs.String("webhook-url", "", "where to deliver webhooks, e.g. http://127.0.0.1:8080/webhooks/hubspot (empty: none)")
	tenSecond := fs.Int("rate-limit", hubspotsim.TenSecondLimitDefault, "API requests allowed per rolling 10 s")
	daily := fs.Int("daily-limit", hubspotsim.DailyLimitDefault, "API requests allowed per day")
	seed := fs.Int64("seed", 1, "seed of fault randomness")
	faultsJSON := fs.String("faults", "", `injected faults as JSON, e.g. {"error500":0.05,"error429":0.02,"latency":"20ms","webhookDuplicate":0.1}`)
	fs.BoolVar(&st.verbose, "v", false, "log every request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync sim [flags]\n\nRuns the HubSpot simulator (CRM objects, properties, batch, search, rate limits,\nsigned webhooks, faults) until SIGINT/SIGTERM. Control API under /_sim/.\nIt reads HUBSPOT_ACCESS_TOKEN, HUBSPOT_CLIENT_SECRET and HUBSPOT_APP_ID as\nserve does, so one .env configures both; a flag given on the command line wins.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return st, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return st, fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	e.resolve()
	st.tokenShown, st.secretShown = token, secret
	if token == "" {
		token, st.tokenShown = hubspotsim.AccessTokenDefault, hubspotsim.AccessTokenDefault
	} else if token != hubspotsim.AccessTokenDefault {
		st.tokenShown = "(your HUBSPOT_ACCESS_TOKEN)"
	}
	if secret == "" {
		secret, st.secretShown = hubspotsim.ClientSecretDefault, hubspotsim.ClientSecretDefault
	} else if secret != hubspotsim.ClientSecretDefault {
		st.secretShown = "(your HUBSPOT_CLIENT_SECRET)"
	}
	appID, err := strconv.ParseInt(strings.TrimSpace(appIDText), 10, 64)
	if err != nil || appID <= 0 {
		return st, fmt.Errorf("HUBSPOT_APP_ID/-app-id %q is not a positive number", appIDText)
	}
	st.cfg = hubspotsim.Config{
		AppID: appID, AccessToken: token, ClientSecret: secret, WebhookURL: *webhookURL,
		TenSecondLimit: *tenSecond, DailyLimit: *daily, Seed: *seed,
	}
	if *faultsJSON != "" {
		if err := json.Unmarshal([]byte(*faultsJSON), &st.cfg.Faults); err != nil {
			return st, fmt.Errorf("-faults: %w", err)
		}
	}
	return st, nil
}

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	st, err := parseSim(args, stderr)
	if err != nil {
		return err
	}
	cfg := st.cfg
	if st.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sim, err := hubspotsim.New(cfg)
	if err != nil {
		return err
	}
	defer sim.Close()
	if err := sim.Start(st.addr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hubspot simulator listening on %s\n", sim.URL())
	fmt.Fprintf(stdout, "  HUBSPOT_API_BASE=%s HUBSPOT_ACCESS_TOKEN=%s HUBSPOT_CLIENT_SECRET=%s HUBSPOT_APP_ID=%d\n", sim.URL(), st.tokenShown, st.secretShown, cfg.AppID)
	if cfg.WebhookURL != "" {
		fmt.Fprintf(stdout, "  webhooks to %s\n", cfg.WebhookURL)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "hubspot simulator stopped")
	return nil
}
