// Package simserve is the listener the simulators share (hubspot/hubspotsim,
// qstash/qstashsim): serve a handler on an address in the background, report
// its base URL, and close it once.
package simserve

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Listener serves one handler at a time. The zero value is ready; it cannot
// be started again once closed.
type Listener struct {
	mu     sync.Mutex
	srv    *http.Server
	url    string
	closed bool
	wg     sync.WaitGroup
}

// Start listens on addr (e.g. "127.0.0.1:0") and serves h in the background.
// name prefixes errors and logs; closed is returned after Close.
func (l *Listener) Start(addr string, h http.Handler, name string, log *slog.Logger, closed error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return closed
	}
	if l.srv != nil {
		return fmt.Errorf("%s: already started", name)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s: listen %s: %w", name, addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	l.srv, l.url = srv, "http://"+ln.Addr().String()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(name+": serve", "err", err)
		}
	}()
	return nil
}

// URL is the base URL ("http://127.0.0.1:port") after Start, else "".
func (l *Listener) URL() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.url
}

// Close closes the listener and its connections (no later Start succeeds)
// and waits for the serving goroutine.
func (l *Listener) Close() error {
	l.mu.Lock()
	l.closed = true
	srv := l.srv
	l.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	l.wg.Wait()
	return err
}
