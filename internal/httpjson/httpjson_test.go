package httpjson

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestWrite(t *testing.T) {
	rec := httptest.NewRecorder()
	Error(rec, http.StatusBadRequest, "bad <input>")
	if rec.Code != http.StatusBadRequest || rec.Body.String() != `{"error":"bad \u003cinput\u003e"}`+"\n" {
		t.Fatalf("Error = %d %q", rec.Code, rec.Body.String())
	}
	if rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("headers = %v", rec.Header())
	}
	rec = httptest.NewRecorder()
	Write(rec, http.StatusOK, map[string]any{"f": func() {}}) // cannot be encoded
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"internal error: encode response"}`+"\n" {
		t.Fatalf("unencodable = %d %q", rec.Code, rec.Body.String())
	}
}
