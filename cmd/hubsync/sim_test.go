package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
)

// TestSimReadsEnvironment checks that `hubsync sim` takes serve's HUBSPOT_*
// variables, that flags win, and that a real token is never printed.
// Not parallel: it sets the environment.
func TestSimReadsEnvironment(t *testing.T) {
	t.Setenv("HUBSPOT_ACCESS_TOKEN", "pat-env-token")
	t.Setenv("HUBSPOT_CLIENT_SECRET", "env-secret")
	t.Setenv("HUBSPOT_APP_ID", "77")

	st, err := parseSim(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.cfg.AccessToken != "pat-env-token" || st.cfg.ClientSecret != "env-secret" || st.cfg.AppID != 77 {
		t.Fatalf("from the environment: %+v", st.cfg)
	}
	if strings.Contains(st.tokenShown+st.secretShown, "pat-env-token") || strings.Contains(st.tokenShown+st.secretShown, "env-secret") {
		t.Fatalf("would print the credentials: %q %q", st.tokenShown, st.secretShown)
	}

	// The simulator accepts exactly the environment's token.
	sim, err := hubspotsim.New(st.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	for token, wantOK := range map[string]bool{"pat-env-token": true, hubspotsim.AccessTokenDefault: false} {
		c, err := hubspot.NewClient(hubspot.Config{BaseURL: sim.URL(), AccessToken: token})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.GetProperties(context.Background(), hubspot.Contacts)
		if (err == nil) != wantOK {
			t.Errorf("token %q: err %v, want ok=%v", token, err, wantOK)
		}
	}

	// Flags win over the environment.
	st, err = parseSim([]string{"-token", "flag-token", "-app-id", "88"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.cfg.AccessToken != "flag-token" || st.cfg.AppID != 88 || st.cfg.ClientSecret != "env-secret" {
		t.Fatalf("flags over the environment: %+v", st.cfg)
	}

	t.Setenv("HUBSPOT_APP_ID", "app-seventy")
	if _, err := parseSim(nil, io.Discard); err == nil || !strings.Contains(err.Error(), "HUBSPOT_APP_ID") {
		t.Fatalf("a bad HUBSPOT_APP_ID: %v, want an error naming it", err)
	}

	// Without the environment, the simulator's fakes, printed for serve.
	t.Setenv("HUBSPOT_ACCESS_TOKEN", "")
	t.Setenv("HUBSPOT_CLIENT_SECRET", "")
	t.Setenv("HUBSPOT_APP_ID", "")
	st, err = parseSim(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.cfg.AccessToken != hubspotsim.AccessTokenDefault || st.cfg.ClientSecret != hubspotsim.ClientSecretDefault || st.cfg.AppID != hubspotsim.AppIDDefault {
		t.Fatalf("defaults: %+v", st.cfg)
	}
	if st.tokenShown != hubspotsim.AccessTokenDefault || st.secretShown != hubspotsim.ClientSecretDefault {
		t.Fatalf("the fakes are printed as is: %q %q", st.tokenShown, st.secretShown)
	}
}
