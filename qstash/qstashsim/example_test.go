package qstashsim_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/hubsync/hubsync/hubspot/hubspotsim"
	"github.com/hubsync/hubsync/qstash/qstashsim"
)

// The demo's setup: the QStash emulator and the HubSpot simulator on one
// address, so QSTASH_URL and HUBSPOT_API_BASE are the same URL; a worker
// receives a signed delivery and verifies it.
func ExampleServer_StartWith() {
	hub, err := hubspotsim.New(hubspotsim.Config{})
	if err != nil {
		panic(err)
	}
	defer hub.Close()
	q, err := qstashsim.New(qstashsim.Config{DelayScale: 0.001})
	if err != nil {
		panic(err)
	}
	defer q.Close()
	if err := q.StartWith("127.0.0.1:0", hub.Handler()); err != nil {
		panic(err)
	}

	verified := make(chan error, 1)
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		cur, next := q.SigningKeys()
		_, err := qstashsim.Verify(r.Header.Get("Upstash-Signature"), []string{cur, next}, "http://"+r.Host+r.URL.RequestURI(), body, time.Now(), time.Minute)
		verified <- err
	}))
	defer worker.Close()

	req, _ := http.NewRequest(http.MethodPost, q.URL()+"/v2/publish/"+worker.URL+"/qstash/hubspot", strings.NewReader(`{"eventId":"1"}`))
	req.Header.Set("Authorization", "Bearer "+q.Token())
	req.Header.Set("Upstash-Deduplication-Id", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("publish:", resp.Status)
	fmt.Println("signature verified:", <-verified == nil)
	if err := q.WaitIdle(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("delivered:", q.Stats().Delivered)

	// The HubSpot API answers on the same address.
	hreq, _ := http.NewRequest(http.MethodGet, q.URL()+"/crm/v3/properties/contacts", nil)
	hreq.Header.Set("Authorization", "Bearer "+hubspotsim.AccessTokenDefault)
	hresp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		panic(err)
	}
	hresp.Body.Close()
	fmt.Println("hubspot:", hresp.Status)
	// Output:
	// publish: 201 Created
	// signature verified: true
	// delivered: 1
	// hubspot: 200 OK
}
