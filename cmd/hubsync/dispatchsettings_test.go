package main

import (
	"testing"

	"github.com/hubsync/hubsync/server"
)

// TestFinishDispatch: -qstash-retries 0 means no retry (QStash delivers each
// message once), which server.Config spells as a negative number, its zero
// being the default of 5.
func TestFinishDispatch(t *testing.T) {
	for flag, want := range map[int]int{0: -1, 1: 1, 5: 5} {
		cfg := server.Config{QStashRetries: flag}
		if err := finishDispatch(&cfg); err != nil || cfg.QStashRetries != want {
			t.Errorf("-qstash-retries %d = %d, %v; want %d", flag, cfg.QStashRetries, err, want)
		}
	}
	if err := finishDispatch(&server.Config{QStashRetries: -2}); err == nil {
		t.Error("-qstash-retries -2 accepted")
	}
}
