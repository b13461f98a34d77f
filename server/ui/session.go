package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"time"
)

// SessionCookie is the name of the dashboard's session cookie.
const SessionCookie = "hubsync_ui"

// sessionIDLen is the random part of a session, in bytes.
const sessionIDLen = 16

var errBadSession = errors.New("ui: no valid session")

// sessions issues and checks signed, expiring session cookies. A session is
// sessionID (random) and its expiry, with an HMAC over both; its CSRF token is
// another HMAC of the session id, so a page can carry it without the cookie
// being readable by script.
type sessions struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

func newSessions(token string, ttl time.Duration, now func() time.Time) *sessions {
	// The key is derived from the admin token: replicas sharing the token
	// share sessions, and a new token ends every session.
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("hubsync dashboard session key v1"))
	return &sessions{key: m.Sum(nil), ttl: ttl, now: now}
}

func (s *sessions) mac(label string, b []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(label))
	m.Write(b)
	return m.Sum(nil)
}

// issue returns a new session's cookie value and its expiry.
func (s *sessions) issue() (string, time.Time) {
	exp := s.now().Add(s.ttl).Truncate(time.Second)
	body := make([]byte, sessionIDLen+8)
	rand.Read(body[:sessionIDLen]) //nolint:errcheck // crypto/rand never fails
	binary.BigEndian.PutUint64(body[sessionIDLen:], uint64(exp.Unix()))
	enc := base64.RawURLEncoding
	return enc.EncodeToString(body) + "." + enc.EncodeToString(s.mac("session", body)), exp
}

// check returns the session id of a valid, unexpired cookie value.
func (s *sessions) check(v string) ([]byte, error) {
	if len(v) > 200 {
		return nil, errBadSession
	}
	b64, sig64, ok := strings.Cut(v, ".")
	if !ok {
		return nil, errBadSession
	}
	enc := base64.RawURLEncoding
	body, err := enc.DecodeString(b64)
	if err != nil || len(body) != sessionIDLen+8 {
		return nil, errBadSession
	}
	sig, err := enc.DecodeString(sig64)
	if err != nil || !hmac.Equal(sig, s.mac("session", body)) {
		return nil, errBadSession
	}
	if exp := time.Unix(int64(binary.BigEndian.Uint64(body[sessionIDLen:])), 0); !s.now().Before(exp) {
		return nil, errBadSession
	}
	return body[:sessionIDLen], nil
}

// csrf is the CSRF token of session id.
func (s *sessions) csrf(id []byte) string {
	return base64.RawURLEncoding.EncodeToString(s.mac("csrf", id))
}

// checkCSRF reports whether tok is the CSRF token of session id.
func (s *sessions) checkCSRF(id []byte, tok string) bool {
	want := s.csrf(id)
	return len(tok) == len(want) && subtle.ConstantTimeCompare([]byte(tok), []byte(want)) == 1
}

// secureRequest reports whether r reached us over https: TLS here, or a
// trusted proxy saying so.
func secureRequest(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	if !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "https") {
		return false
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	for _, p := range trusted {
		if p.Contains(ap.Addr().Unmap()) {
			return true
		}
	}
	return false
}
