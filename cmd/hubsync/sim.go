package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/qstash/qstashsim"
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
	// qstash serves the QStash emulator on the same address, with qcfg.
	qstash bool
	qcfg   qstashsim.Config
	// qShown are the QStash credentials to print, hidden as above:
	// token, current and next signing key.
	qShown [3]string
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
	timeZone := fs.String("time-zone", "UTC", "the account's time zone (IANA name), at whose midnight the daily limit resets")
	seed := fs.Int64("seed", 1, "seed of fault randomness")
	faultsJSON := fs.String("faults", "", `injected faults as JSON, e.g. {"error500":0.05,"error429":0.02,"latency":"20ms","webhookDuplicate":0.1}`)
	fs.BoolVar(&st.verbose, "v", false, "log every request")
	fs.BoolVar(&st.qstash, "qstash", false, "also serve the QStash emulator (/v2/publish, /v2/dlq, /_sim/qstash/) on this address: QSTASH_URL is the simulator's URL")
	var qToken, qCurrent, qNext string
	e.secret(&qToken, "qstash-token", "QSTASH_TOKEN", "with -qstash, the only QStash token accepted; default the official dev server's")
	e.secret(&qCurrent, "qstash-current-signing-key", "QSTASH_CURRENT_SIGNING_KEY", "with -qstash, the key that signs deliveries; default "+qstashsim.CurrentSigningKeyDefault)
	e.secret(&qNext, "qstash-next-signing-key", "QSTASH_NEXT_SIGNING_KEY", "with -qstash, the next signing key; default "+qstashsim.NextSigningKeyDefault)
	qSignNext := fs.Bool("qstash-sign-with-next", false, "with -qstash, sign deliveries with the next key, as after a key roll")
	qScale := fs.Float64("qstash-delay-scale", 1, "with -qstash, multiply retry backoff, Retry-After and Upstash-Delay waits by this (e.g. 0.01)")
	qFaults := fs.String("qstash-faults", "", `with -qstash, injected delivery faults as JSON, e.g. {"drop":0.05,"delay":0.1,"delayDuration":"200ms","duplicate":0.05}`)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: hubsync sim [flags]\n\nRuns the HubSpot simulator (CRM objects, properties, batch, search, rate limits,\nsigned webhooks, faults) until SIGINT/SIGTERM. Control API under /_sim/.\nIt reads HUBSPOT_ACCESS_TOKEN, HUBSPOT_CLIENT_SECRET and HUBSPOT_APP_ID as\nserve does, so one .env configures both; a flag given on the command line wins.\nWith -qstash it also emulates QStash on the same address, reading QSTASH_TOKEN,\nQSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY (default: the official\nlocal development values).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return st, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return st, fmt.Errorf("unexpected argument %q: %w", fs.Arg(0), errUsage)
	}
	if err := e.resolve(); err != nil {
		return st, err
	}
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
		return st, fmt.Errorf("HUBSPOT_APP_ID/-app-id %q is not a positive number; set it to your app's numeric id, or leave it unset for the simulator's own (%d)", appIDText, hubspotsim.AppIDDefault)
	}
	st.cfg = hubspotsim.Config{
		AppID: appID, AccessToken: token, ClientSecret: secret, WebhookURL: *webhookURL,
		TenSecondLimit: *tenSecond, DailyLimit: *daily, TimeZone: *timeZone, Seed: *seed,
	}
	if *faultsJSON != "" {
		if err := json.Unmarshal([]byte(*faultsJSON), &st.cfg.Faults); err != nil {
			return st, fmt.Errorf(`-faults: %w; write a JSON object such as {"error500":0.05,"latency":"20ms"}`, err)
		}
		if err := st.cfg.Faults.Validate(); err != nil {
			return st, fmt.Errorf("-faults: %w", err)
		}
	}
	if st.qstash {
		if err := qstashSimSettings(&st, qToken, qCurrent, qNext, *qSignNext, *qScale, *qFaults); err != nil {
			return st, err
		}
	}
	return st, nil
}

// qstashSimSettings fills the QStash emulator's settings, defaulting to the
// official local development values and naming the variable or flag of any
// bad value.
func qstashSimSettings(st *simSettings, token, current, next string, signNext bool, scale float64, faults string) error {
	shown := func(v, def, env string) (string, string) {
		switch v {
		case "":
			return def, def
		case def:
			return v, v
		}
		return v, "(your " + env + ")"
	}
	token, st.qShown[0] = shown(token, qstashsim.TokenDefault, "QSTASH_TOKEN")
	current, st.qShown[1] = shown(current, qstashsim.CurrentSigningKeyDefault, "QSTASH_CURRENT_SIGNING_KEY")
	next, st.qShown[2] = shown(next, qstashsim.NextSigningKeyDefault, "QSTASH_NEXT_SIGNING_KEY")
	if current == next {
		return errors.New("QSTASH_CURRENT_SIGNING_KEY and QSTASH_NEXT_SIGNING_KEY (-qstash-current-signing-key, -qstash-next-signing-key) are equal; give the next key another value")
	}
	if !(scale > 0 && scale <= 1000) {
		return fmt.Errorf("-qstash-delay-scale %v must be above 0 and at most 1000 (1: QStash's real waits, 0.01: a hundred times faster)", scale)
	}
	st.qcfg = qstashsim.Config{
		Token: token, CurrentSigningKey: current, NextSigningKey: next,
		SignWithNext: signNext, DelayScale: scale, Seed: st.cfg.Seed,
	}
	if faults != "" {
		if err := json.Unmarshal([]byte(faults), &st.qcfg.Faults); err != nil {
			return fmt.Errorf(`-qstash-faults: %w; write a JSON object such as {"drop":0.05,"delay":0.1,"delayDuration":"200ms"}`, err)
		}
		if err := st.qcfg.Faults.Validate(); err != nil {
			return fmt.Errorf("-qstash-faults: %w", err)
		}
	}
	return nil
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
	base := ""
	if st.qstash {
		qcfg := st.qcfg
		qcfg.Logger = cfg.Logger
		q, err := qstashsim.New(qcfg)
		if err != nil {
			return err
		}
		defer q.Close()
		// One address for both: QStash's paths go to the emulator, the rest
		// to the HubSpot simulator.
		if err := q.StartWith(st.addr, sim.Handler()); err != nil {
			return err
		}
		base = q.URL()
	} else {
		if err := sim.Start(st.addr); err != nil {
			return err
		}
		base = sim.URL()
	}
	fmt.Fprintf(stdout, "hubspot simulator listening on %s\n", base)
	fmt.Fprintf(stdout, "  HUBSPOT_API_BASE=%s HUBSPOT_ACCESS_TOKEN=%s HUBSPOT_CLIENT_SECRET=%s HUBSPOT_APP_ID=%d\n", base, st.tokenShown, st.secretShown, cfg.AppID)
	if cfg.WebhookURL != "" {
		fmt.Fprintf(stdout, "  webhooks to %s\n", cfg.WebhookURL)
	}
	if st.qstash {
		fmt.Fprintf(stdout, "qstash emulator on the same address (stats at %s/_sim/qstash/stats)\n", base)
		fmt.Fprintf(stdout, "  QSTASH_URL=%s\n  QSTASH_TOKEN=%s\n  QSTASH_CURRENT_SIGNING_KEY=%s\n  QSTASH_NEXT_SIGNING_KEY=%s\n", base, st.qShown[0], st.qShown[1], st.qShown[2])
		if st.qcfg.SignWithNext {
			fmt.Fprintln(stdout, "  signing deliveries with the next key")
		}
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "hubspot simulator stopped")
	return nil
}
