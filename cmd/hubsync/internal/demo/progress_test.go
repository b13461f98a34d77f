package demo

import (
	"bytes"
	"strings"
	"testing"
)

func TestRenderLine(t *testing.T) {
	t.Parallel()
	s := RenderLine(Line{Label: "outbound", Done: 50, Total: 200, Note: "retries 3"})
	for _, want := range []string{"outbound", "25.0%", "50/200", "retries 3", strings.Repeat("█", 7) + "░"} {
		if !strings.Contains(s, want) {
			t.Errorf("RenderLine = %q, lacks %q", s, want)
		}
	}
	if s := RenderLine(Line{Label: "api", Note: "5 calls"}); !strings.Contains(s, "5 calls") {
		t.Errorf("note line = %q", s)
	}
	if s := RenderLine(Line{Label: "x", Done: 9, Total: 3}); !strings.Contains(s, strings.Repeat("█", barWidth)) {
		t.Errorf("overfull line = %q, want a full bar", s)
	}
}

func TestProgressPlainAndQuiet(t *testing.T) {
	t.Parallel()
	lines := func() []Line { return []Line{{Label: "local", Done: 1, Total: 2}, {Label: "api", Note: "3 calls"}} }
	var buf bytes.Buffer
	NewProgress(&buf, false, lines).Draw()
	if got := buf.String(); got != "local 1/2 | api 3 calls\n" || strings.Contains(got, "\x1b") {
		t.Errorf("plain output = %q", got)
	}
	buf.Reset()
	p := NewProgress(&buf, true, lines)
	p.Draw()
	p.Printf("hello")
	if buf.Len() != 0 {
		t.Errorf("quiet progress wrote %q", buf.String())
	}
}
