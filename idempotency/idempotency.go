package idempotency

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/hubsync/hubsync/internal/dialectsql"
	"github.com/hubsync/hubsync/internal/httpjson"
	"github.com/hubsync/hubsync/internal/textcheck"
	"github.com/hubsync/hubsync/store"
)

//go:embed sql
var sqlFS embed.FS

// Defaults.
const (
	// RetentionDefault is how long a key is remembered.
	RetentionDefault = 24 * time.Hour
	// HeaderName is the request header holding the key.
	HeaderName = "Idempotency-Key"
	// ReplayedHeader is set to "true" on a replayed response.
	ReplayedHeader = "Idempotent-Replayed"
	// MaxKeyLength bounds a key.
	MaxKeyLength = 255
	// MaxBodyBytes bounds the body the middleware hashes; a larger one is
	// passed on unhashed for the handler to refuse.
	MaxBodyBytes = 1 << 20
	// StaleAfter is how long after its claim a key still in progress is
	// taken for a request whose process stopped: the 409 then says to check
	// the resource and use a new key, instead of inviting a retry.
	StaleAfter = 5 * time.Minute
)

// Store holds the keys in the hubsync_idempotency table of a store's database.
type Store struct {
	st store.Store
	d  store.Dialect
	q  *dialectsql.Queries
}

// NewStore returns the key store of st's database.
func NewStore(st store.Store) *Store {
	q, err := dialectsql.Load(sqlFS, "sql", st.Dialect())
	if err != nil {
		panic(err)
	}
	return &Store{st: st, d: st.Dialect(), q: q}
}

// Cleanup deletes the keys created before cutoff.
func (s *Store) Cleanup(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.st.DB().ExecContext(ctx, s.q.Get("cleanup"), dialectsql.Time(s.d, cutoff))
	if err != nil {
		return 0, fmt.Errorf("idempotency: cleanup: %w", err)
	}
	return res.RowsAffected()
}

type entry struct {
	hash        string
	status      int
	contentType string
	location    string
	body        []byte
	created     time.Time
}

func (s *Store) claim(ctx context.Context, scope, key, hash string) (bool, error) {
	res, err := s.st.DB().ExecContext(ctx, s.q.Get("claim"), scope, key, hash, dialectsql.Time(s.d, s.st.Now()))
	if err != nil {
		return false, fmt.Errorf("idempotency: claim: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

func (s *Store) get(ctx context.Context, scope, key string) (entry, bool, error) {
	var e entry
	err := s.st.DB().QueryRowContext(ctx, s.q.Get("get"), scope, key).Scan(&e.hash, &e.status, &e.contentType, &e.location, &e.body, dialectsql.TimeDest(&e.created))
	if errors.Is(err, sql.ErrNoRows) {
		return entry{}, false, nil
	}
	if err != nil {
		return entry{}, false, fmt.Errorf("idempotency: get: %w", err)
	}
	return e, true, nil
}

func (s *Store) finish(ctx context.Context, scope, key string, status int, h http.Header, body []byte) error {
	_, err := s.st.DB().ExecContext(ctx, s.q.Get("finish"), status, h.Get("Content-Type"), h.Get("Location"), body, scope, key)
	return err
}

func (s *Store) forget(ctx context.Context, scope, key string) error {
	_, err := s.st.DB().ExecContext(ctx, s.q.Get("forget"), scope, key)
	return err
}

// forgetExpired forgets the key only if it was created before cutoff.
func (s *Store) forgetExpired(ctx context.Context, scope, key string, cutoff time.Time) error {
	_, err := s.st.DB().ExecContext(ctx, s.q.Get("forget_expired"), scope, key, dialectsql.Time(s.d, cutoff))
	return err
}

// Config configures a Middleware.
type Config struct {
	// Store holds the keys; required.
	Store *Store
	// Scope separates the keys of different APIs, e.g. "records".
	Scope string
	// Retention is how long a key is honoured; default RetentionDefault. An
	// expired key not yet cleaned up is treated as new.
	Retention time.Duration
	// Logger receives storage errors; default slog.Default().
	Logger *slog.Logger
}

// Middleware gives POST, PATCH, PUT and DELETE requests that carry an
// Idempotency-Key header the package's semantics; other requests pass
// through.
func Middleware(cfg Config, next http.Handler) http.Handler {
	cfg.Retention = cmp.Or(cfg.Retention, RetentionDefault)
	cfg.Logger = cmp.Or(cfg.Logger, slog.Default())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get(HeaderName)
		switch r.Method {
		case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		default:
			key = ""
		}
		if key == "" {
			next.ServeHTTP(w, r)
			return
		}
		if len(key) > MaxKeyLength {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("the Idempotency-Key header is longer than %d characters", MaxKeyLength))
			return
		}
		if p := textcheck.Problem(key); p != "" {
			httpjson.Error(w, http.StatusBadRequest, "the Idempotency-Key header "+p+"; send printable text, e.g. a UUID")
			return
		}
		rest := r.Body
		body, err := io.ReadAll(io.LimitReader(rest, MaxBodyBytes+1))
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, "read body: "+err.Error())
			return
		}
		if len(body) > MaxBodyBytes {
			// Not kept: the handler gets the whole body (what was read, then
			// the rest) and answers 413.
			r.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(bytes.NewReader(body), rest), rest}
			next.ServeHTTP(w, r)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sum := sha256.Sum256([]byte(r.Method + "\n" + r.URL.RequestURI() + "\n" + string(body)))
		hash := hex.EncodeToString(sum[:])
		ctx := r.Context()
		for attempt := 0; ; attempt++ {
			claimed, err := cfg.Store.claim(ctx, cfg.Scope, key, hash)
			if err != nil {
				cfg.Logger.Error("idempotency", "err", err)
				httpjson.Error(w, http.StatusInternalServerError, "internal error")
				return
			}
			if claimed {
				run(cfg, w, r, next, key)
				return
			}
			e, ok, err := cfg.Store.get(ctx, cfg.Scope, key)
			if err != nil {
				cfg.Logger.Error("idempotency", "err", err)
				httpjson.Error(w, http.StatusInternalServerError, "internal error")
				return
			}
			cutoff := cfg.Store.st.Now().Add(-cfg.Retention)
			expired := ok && e.created.Before(cutoff)
			if (!ok || expired) && attempt == 0 {
				if expired {
					// Only the expired row: a concurrent retry may have
					// forgotten it already and claimed the key afresh.
					if err := cfg.Store.forgetExpired(ctx, cfg.Scope, key, cutoff); err != nil {
						cfg.Logger.Error("idempotency", "err", err)
					}
				}
				continue // gone or expired in between: claim again
			}
			switch {
			case !ok || expired:
				httpjson.Error(w, http.StatusConflict, "the Idempotency-Key is being reused concurrently; retry")
			case e.hash != hash:
				httpjson.Error(w, http.StatusConflict, fmt.Sprintf("Idempotency-Key %q was already used for a different request (another method, path or body); use a new key for a new request", key))
			case e.status == 0 && e.created.Before(cfg.Store.st.Now().Add(-StaleAfter)):
				// Longer than any request runs: its process stopped, maybe
				// after writing. No retry under this key can tell.
				httpjson.Error(w, http.StatusConflict, fmt.Sprintf("the first request with Idempotency-Key %q never finished (its process stopped, perhaps after writing): check whether the resource exists, and send a new request under a new key", key))
			case e.status == 0:
				w.Header().Set("Retry-After", "1")
				httpjson.Error(w, http.StatusConflict, fmt.Sprintf("a request with Idempotency-Key %q is still in progress; retry later", key))
			default:
				if e.contentType != "" {
					w.Header().Set("Content-Type", e.contentType)
				}
				if e.location != "" {
					w.Header().Set("Location", e.location)
				}
				w.Header().Set(ReplayedHeader, "true")
				w.WriteHeader(e.status)
				w.Write(e.body) //nolint:errcheck // the client went away
			}
			return
		}
	})
}

// run serves the first request of a key and stores its response; a 5xx
// response is not stored, so that a retry runs again, and neither is a
// handler's panic, which run passes on after forgetting the key.
func run(cfg Config, w http.ResponseWriter, r *http.Request, next http.Handler, key string) {
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
		defer cancel()
		if err := cfg.Store.forget(ctx, cfg.Scope, key); err != nil {
			cfg.Logger.Error("idempotency: forget the key of a panicked request", "key", key, "err", err)
		}
	}()
	next.ServeHTTP(rec, r)
	panicked = false
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 15*time.Second)
	defer cancel()
	var err error
	if rec.status >= 500 {
		err = cfg.Store.forget(ctx, cfg.Scope, key)
	} else {
		err = cfg.Store.finish(ctx, cfg.Scope, key, rec.status, w.Header(), rec.body.Bytes())
	}
	if err != nil {
		cfg.Logger.Error("idempotency: store response", "key", key, "err", err)
	}
}

// recorder passes a response through and keeps a copy.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	r.wrote = true
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
