package qstashsim

import "testing"

// NewTest starts a Server on 127.0.0.1:0 for a test and closes it in
// t.Cleanup. It fails the test if cfg is invalid.
func NewTest(t testing.TB, cfg Config) *Server {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("qstashsim.New: %v", err)
	}
	if err := s.Start("127.0.0.1:0"); err != nil {
		_ = s.Close()
		t.Fatalf("qstashsim.Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
