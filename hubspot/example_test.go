package hubspot_test

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hubsync/hubsync/hubspot"
)

// A webhook receiver verifies the raw body against the public URI HubSpot called.
func ExampleVerifyRequest() {
	secret := "client-secret"
	body := []byte(`[{"eventId":1,"subscriptionType":"contact.creation","objectId":42}]`)
	uri := "https://hooks.example.com/hubspot"
	now := time.UnixMilli(1_700_000_000_000)

	h := http.Header{}
	h.Set(hubspot.HeaderSignatureV3, hubspot.SignV3(secret, "POST", uri, body, now.UnixMilli()))
	h.Set(hubspot.HeaderRequestTimestamp, fmt.Sprint(now.UnixMilli()))

	fmt.Println(hubspot.VerifyRequest(secret, "POST", uri, body, h, now, 0))
	err := hubspot.VerifyRequest(secret, "POST", uri, body, h, now.Add(10*time.Minute), 0)
	fmt.Println(errors.Is(err, hubspot.ErrTimestampStale))
	// Output:
	// <nil>
	// true
}

// A scheduler decides what to do with a failed call from its Kind.
func ExampleKindOf() {
	var err error = &hubspot.Error{StatusCode: 429, PolicyName: "TEN_SECONDLY_ROLLING", Kind: hubspot.KindRateLimited, RetryAfter: 10 * time.Second}
	switch hubspot.KindOf(err) {
	case hubspot.KindRateLimited, hubspot.KindRetryable:
		fmt.Println("retry after", hubspot.RetryAfterOf(err))
	case hubspot.KindConflict:
		fmt.Println("link to existing record")
	default:
		fmt.Println("give up:", err)
	}
	// Output:
	// retry after 10s
}
