package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

func init() {
	register("sim", command{summary: "run the HubSpot simulator until signalled", run: runSim})
}

// simAddrDefault keeps the simulator off serve's default port.
const simAddrDefault = "127.0.0.1:8090"

func runSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("sim", stderr)
	addr := fs.String("addr", simAddrDefault, "listen address (port 0: any free port)")
	// The simulator's credentials are fakes it prints for serve to use; they
	// are deliberately not read from HUBSPOT_* so a real token is never echoed.
	token := fs.String("token", hubspotsim.AccessTokenDefault, "the only access token accepted")
	secret := fs.String("client-secret", hubspotsim.ClientSecretDefault, "client secret that signs webhooks")
	appID := fs.Int64("app-id", hubspotsim.AppIDDefault, "app id; API writes produce webhook events with this sourceId")
	webhookURL := fs.String("webhook-url", "", "where to deliver webhooks, e.g. http://127.0.0.1:8080/webhooks/hubspot (empty: none)")
	tenSecond := fs.Int("rate-limit", hubspotsim.TenSecondLimitDefault, "API requests allowed per rolling 10 s")
	daily := fs.Int("daily-limit", hubspotsim.DailyLimitDefault, "API requests allowed per day")
	seed := fs.Int64("seed", 1, "seed of fault randomness")
	faultsJSON := fs.String("faults", "", `injected faults as JSON, e.g. {"error500":0.05,"error429":0.02,"latency":"20ms","webhookDuplicate":0.1}`)
	verbose := fs.Bool("v", false, "log every request")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync sim [flags]\n\nRuns the HubSpot simulator (CRM objects, batch, search, rate limits, signed\nwebhooks, faults) until SIGINT/SIGTERM. Control API under /_sim/.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	cfg := hubspotsim.Config{
		AppID: *appID, AccessToken: *token, ClientSecret: *secret, WebhookURL: *webhookURL,
		TenSecondLimit: *tenSecond, DailyLimit: *daily, Seed: *seed,
	}
	if *faultsJSON != "" {
		if err := json.Unmarshal([]byte(*faultsJSON), &cfg.Faults); err != nil {
			return fmt.Errorf("-faults: %w", err)
		}
	}
	if *verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sim, err := hubspotsim.New(cfg)
	if err != nil {
		return err
	}
	defer sim.Close()
	if err := sim.Start(*addr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "hubspot simulator listening on %s\n", sim.URL())
	fmt.Fprintf(stdout, "  HUBSPOT_API_BASE=%s HUBSPOT_ACCESS_TOKEN=%s HUBSPOT_CLIENT_SECRET=%s HUBSPOT_APP_ID=%d\n", sim.URL(), *token, *secret, *appID)
	if *webhookURL != "" {
		fmt.Fprintf(stdout, "  webhooks to %s\n", *webhookURL)
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "hubspot simulator stopped")
	return nil
}
