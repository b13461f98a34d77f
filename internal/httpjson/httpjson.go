// Package httpjson writes the JSON answers of hubsync's HTTP handlers (the
// records API, subscription requests, Idempotency-Key replays, the webhook
// receiver): one encoding, one set of headers.
package httpjson

import (
	"bytes"
	"encoding/json"
	"net/http"
)

// Write answers status with v as JSON. v is encoded before anything is sent,
// so a value that cannot be encoded becomes a 500 instead of a half-written
// body. Every answer carries X-Content-Type-Options: nosniff, so a browser
// never reads it as another type.
func Write(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal error: encode response"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(buf.Bytes()) //nolint:errcheck // the client went away
}

// Error answers status with {"error": msg}.
func Error(w http.ResponseWriter, status int, msg string) {
	Write(w, status, map[string]string{"error": msg})
}
