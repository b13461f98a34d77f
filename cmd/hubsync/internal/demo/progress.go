package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Line is one progress line: a labelled bar of Done out of Total, or only a
// Note when Total is 0.
type Line struct {
	Label string
	Done  int64
	Total int64
	Note  string
}

// barWidth is the width of a bar in characters.
const barWidth = 30

// RenderLine formats one progress line without a newline.
func RenderLine(l Line) string {
	if l.Total <= 0 {
		return fmt.Sprintf("%-20s %s", l.Label, l.Note)
	}
	done := min(max(l.Done, 0), l.Total)
	fill := int(done * barWidth / l.Total)
	bar := strings.Repeat("█", fill) + strings.Repeat("░", barWidth-fill)
	s := fmt.Sprintf("%-20s %s %5.1f%% %d/%d", l.Label, bar, 100*float64(done)/float64(l.Total), l.Done, l.Total)
	if l.Note != "" {
		s += "  " + l.Note
	}
	return s
}

// Progress redraws a set of lines: in place with ANSI escapes on a terminal,
// as plain periodic lines otherwise, not at all when quiet.
type Progress struct {
	w        io.Writer
	tty      bool
	quiet    bool
	interval time.Duration
	snapshot func() []Line

	mu    sync.Mutex
	drawn int // lines drawn by the last in-place redraw
	stop  chan struct{}
	done  chan struct{}
}

// Progress redraw intervals.
const (
	ttyInterval   = 200 * time.Millisecond
	plainInterval = 2 * time.Second
)

// NewProgress returns a Progress writing to w the lines snapshot returns.
func NewProgress(w io.Writer, quiet bool, snapshot func() []Line) *Progress {
	tty := isTerminal(w)
	p := &Progress{w: w, tty: tty, quiet: quiet, snapshot: snapshot, interval: plainInterval}
	if tty {
		p.interval = ttyInterval
	}
	return p
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Start redraws until ctx ends or Stop is called. It returns at once.
func (p *Progress) Start(ctx context.Context) {
	if p.quiet {
		return
	}
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.stop:
				return
			case <-t.C:
				p.Draw()
			}
		}
	}()
}

// Stop ends the redraw loop and draws the final state once. It is idempotent.
func (p *Progress) Stop() {
	if p.quiet || p.stop == nil {
		return
	}
	p.mu.Lock()
	select {
	case <-p.stop:
		p.mu.Unlock()
		return
	default:
		close(p.stop)
	}
	p.mu.Unlock()
	<-p.done
	p.Draw()
}

// Draw writes the current lines once.
func (p *Progress) Draw() {
	if p.quiet {
		return
	}
	lines := p.snapshot()
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	if p.tty {
		if p.drawn > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
		}
		for _, l := range lines {
			b.WriteString("\x1b[2K")
			b.WriteString(RenderLine(l))
			b.WriteByte('\n')
		}
		p.drawn = len(lines)
	} else {
		parts := make([]string, 0, len(lines))
		for _, l := range lines {
			if l.Total > 0 {
				parts = append(parts, fmt.Sprintf("%s %d/%d", l.Label, l.Done, l.Total))
			} else if l.Note != "" {
				parts = append(parts, l.Label+" "+l.Note)
			}
		}
		b.WriteString(strings.Join(parts, " | "))
		b.WriteByte('\n')
	}
	_, _ = io.WriteString(p.w, b.String())
}

// Printf writes a message line above the bars (the bars are redrawn below it
// on the next tick).
func (p *Progress) Printf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
	fmt.Fprintf(p.w, format+"\n", args...)
}
