package service

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestNewBaseFillsDefaultsAndKeepsWhatIsSet(t *testing.T) {
	b := NewBase("inbound", Base{})
	if b.Logger == nil || b.Now == nil || !strings.Contains(b.Owner, "/inbound-") {
		t.Fatalf("defaults not filled: %+v", b)
	}
	if a, c := OwnerDefault("x"), OwnerDefault("x"); a == c {
		t.Fatalf("two default owners are equal: %q", a)
	}
	at := time.Unix(42, 0)
	log := slog.New(slog.DiscardHandler)
	b = NewBase("inbound", Base{Logger: log, Now: func() time.Time { return at }, Owner: "me"})
	if b.Logger != log || !b.Now().Equal(at) || b.Owner != "me" {
		t.Fatalf("set fields replaced: %+v", b)
	}
}
