package qstash_test

import (
	"fmt"
	"time"

	"github.com/hubsync/hubsync/qstash"
)

// A worker checks every delivery's Upstash-Signature on the raw body before
// it parses anything.
func ExampleVerifier_Verify() {
	now := time.Unix(1_800_000_000, 0)
	v, err := qstash.NewVerifier(qstash.VerifierConfig{
		CurrentSigningKey: "sig_current", NextSigningKey: "sig_next",
		URL: "https://crm.example.com/qstash/hubspot", Now: func() time.Time { return now },
	})
	if err != nil {
		panic(err)
	}
	body := []byte(`{"eventId":"ev-1"}`)
	// What QStash sends, signed with the next key after a key roll.
	token := qstash.Sign("sig_next", qstash.Claims{Issuer: qstash.Issuer, Subject: "https://crm.example.com/qstash/hubspot",
		NotBefore: now.Unix(), ExpiresAt: now.Add(5 * time.Minute).Unix(), Body: qstash.BodyHash(body)})

	_, err = v.Verify(token, body)
	fmt.Println("genuine:", err)
	_, err = v.Verify(token, []byte(`{"eventId":"ev-2"}`))
	fmt.Println("tampered:", err)
	// Output:
	// genuine: <nil>
	// tampered: qstash: invalid signature: body hash does not match
}
