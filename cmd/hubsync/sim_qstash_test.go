package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/internal/testwait"
	"github.com/hubsync/hubsync/qstash/qstashsim"
)

// TestSimQStashSettings checks that `hubsync sim -qstash` takes the QSTASH_*
// variables, defaults to the official dev values, lets flags win, never
// prints a real key, and names the setting of a bad value.
// Not parallel: it sets the environment.
func TestSimQStashSettings(t *testing.T) {
	for _, k := range []string{"QSTASH_TOKEN", "QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY"} {
		t.Setenv(k, "")
	}
	st, err := parseSim([]string{"-qstash"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !st.qstash || st.qcfg.Token != qstashsim.TokenDefault || st.qcfg.CurrentSigningKey != qstashsim.CurrentSigningKeyDefault || st.qcfg.NextSigningKey != qstashsim.NextSigningKeyDefault {
		t.Fatalf("defaults: %+v", st.qcfg)
	}
	if st.qShown != [3]string{qstashsim.TokenDefault, qstashsim.CurrentSigningKeyDefault, qstashsim.NextSigningKeyDefault} {
		t.Fatalf("the dev values are printed as is: %q", st.qShown)
	}

	t.Setenv("QSTASH_TOKEN", "env-token")
	t.Setenv("QSTASH_CURRENT_SIGNING_KEY", "sig_env_current")
	t.Setenv("QSTASH_NEXT_SIGNING_KEY", "sig_env_next")
	st, err = parseSim([]string{"-qstash", "-qstash-next-signing-key", "sig_flag_next"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if st.qcfg.Token != "env-token" || st.qcfg.CurrentSigningKey != "sig_env_current" || st.qcfg.NextSigningKey != "sig_flag_next" {
		t.Fatalf("environment and flags: %+v", st.qcfg)
	}
	if shown := strings.Join(st.qShown[:], " "); strings.Contains(shown, "env-token") || strings.Contains(shown, "sig_env_current") || strings.Contains(shown, "sig_flag_next") {
		t.Fatalf("would print real credentials: %s", shown)
	}

	// Without -qstash, QStash's settings are not read, so a bad one is no error.
	if _, err := parseSim([]string{"-qstash-delay-scale", "0"}, io.Discard); err != nil {
		t.Fatalf("without -qstash: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-qstash", "-qstash-next-signing-key", "sig_env_current"}, "QSTASH_NEXT_SIGNING_KEY"},
		{[]string{"-qstash", "-qstash-delay-scale", "0"}, "-qstash-delay-scale"},
		{[]string{"-qstash", "-qstash-delay-scale", "-1"}, "-qstash-delay-scale"},
		{[]string{"-qstash", "-qstash-faults", `{"drop":3}`}, "-qstash-faults"},
		{[]string{"-qstash", "-qstash-faults", `{"drpo":0.1}`}, "-qstash-faults"},
	} {
		if _, err := parseSim(c.args, io.Discard); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

// syncBuffer is an io.Writer safe to read while the command writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSimQStashEndToEnd runs `hubsync sim -qstash` as a user would and
// publishes through QStash's API on the simulator's own address: the message
// arrives signed with the printed key, and the HubSpot API still answers
// on the same address.
func TestSimQStashEndToEnd(t *testing.T) {
	for _, k := range []string{"QSTASH_TOKEN", "QSTASH_CURRENT_SIGNING_KEY", "QSTASH_NEXT_SIGNING_KEY", "HUBSPOT_ACCESS_TOKEN", "HUBSPOT_CLIENT_SECRET", "HUBSPOT_APP_ID"} {
		t.Setenv(k, "")
	}
	got := make(chan *http.Request, 1)
	gotBody := make(chan []byte, 1)
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		gotBody <- b
	}))
	defer worker.Close()

	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- runSim(ctx, []string{"-addr", "127.0.0.1:0", "-qstash"}, &out, io.Discard) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("runSim: %v", err)
		}
	}()
	urlRE := regexp.MustCompile(`QSTASH_URL=(\S+)`)
	testwait.For(t, "the QSTASH_URL line", func() bool { return urlRE.MatchString(out.String()) })
	base := urlRE.FindStringSubmatch(out.String())[1]
	for _, want := range []string{"QSTASH_TOKEN=" + qstashsim.TokenDefault, "QSTASH_CURRENT_SIGNING_KEY=" + qstashsim.CurrentSigningKeyDefault, "HUBSPOT_API_BASE=" + base} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}

	dest := worker.URL + "/qstash/hubspot"
	req, _ := http.NewRequest(http.MethodPost, base+"/v2/publish/"+dest, strings.NewReader(`{"eventId":"7"}`))
	req.Header.Set("Authorization", "Bearer "+qstashsim.TokenDefault)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Upstash-Flow-Control-Key", "hubspot")
	req.Header.Set("Upstash-Flow-Control-Value", "parallelism=12, rate=150, period=10s")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var pr qstashsim.PublishResponse
	_ = json.NewDecoder(resp.Body).Decode(&pr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || pr.MessageID == "" {
		t.Fatalf("publish: %d %+v", resp.StatusCode, pr)
	}
	r := testwait.Recv(t, "the delivery", got)
	body := <-gotBody
	if r.Header.Get("Upstash-Message-Id") != pr.MessageID {
		t.Fatalf("delivered %s, published %s", r.Header.Get("Upstash-Message-Id"), pr.MessageID)
	}
	if _, err := qstashsim.Verify(r.Header.Get("Upstash-Signature"), []string{qstashsim.CurrentSigningKeyDefault}, dest, body, time.Now(), time.Minute); err != nil {
		t.Fatalf("signature with the printed key: %v", err)
	}

	// The HubSpot simulator shares the address.
	c, err := hubspot.NewClient(hubspot.Config{BaseURL: base, AccessToken: hubspotsim.AccessTokenDefault})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetProperties(context.Background(), hubspot.Contacts); err != nil {
		t.Fatalf("HubSpot API on the shared address: %v", err)
	}
	// And the stats show the delivery.
	testwait.For(t, "delivered=1 in the stats", func() bool {
		resp, err := http.Get(base + "/_sim/qstash/stats")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var st qstashsim.Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatalf("decode the stats: %v", err)
		}
		return st.Delivered == 1 && st.MaxParallelism["hubspot"] == 1 && st.FlowControl["hubspot"].Period == 10*time.Second
	})
}
