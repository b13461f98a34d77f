package logtext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestURI(t *testing.T) {
	t.Parallel()
	if got := URI("/webhooks/hubspot?a=1"); got != "/webhooks/hubspot?a=1" {
		t.Errorf("short URI changed: %q", got)
	}
	long := "/x?q=" + strings.Repeat("é", 1000)
	got := URI(long)
	if len(got) > URIMax+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("URI(%d bytes) = %d bytes %q", len(long), len(got), got)
	}
}
