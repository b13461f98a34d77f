package qstashsim

import (
	"errors"
	"io"
	"net/http"
)

func (s *Server) routes() {
	m := s.api
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !s.authorized(r) {
				writeError(w, http.StatusUnauthorized, "Unauthorized: send Authorization: Bearer $QSTASH_TOKEN")
				return
			}
			h(w, r)
		}
	}
	m.HandleFunc("GET /v2/dlq", auth(s.dlqList))
	m.HandleFunc("GET /v2/dlq/{dlqId}", auth(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		i := s.dlqIndexLocked(r.PathValue("dlqId"))
		var v DLQMessage
		if i >= 0 {
			v = s.dlq[i].view()
		}
		s.mu.Unlock()
		if i < 0 {
			writeError(w, http.StatusNotFound, "dlq message not found")
			return
		}
		writeJSON(w, http.StatusOK, v)
	}))
	m.HandleFunc("DELETE /v2/dlq/{dlqId}", auth(func(w http.ResponseWriter, r *http.Request) {
		if err := s.DeleteDLQ(r.PathValue("dlqId")); err != nil {
			writeError(w, http.StatusNotFound, "dlq message not found")
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	m.HandleFunc("POST /v2/dlq/retry/{dlqId}", auth(func(w http.ResponseWriter, r *http.Request) {
		res, err := s.RetryDLQ(r.PathValue("dlqId"), r.Header)
		switch {
		case errors.Is(err, ErrNotFound):
			writeError(w, http.StatusNotFound, "dlq message not found")
		case errors.Is(err, ErrClosed):
			writeError(w, http.StatusServiceUnavailable, err.Error())
		case err != nil:
			writeError(w, http.StatusBadRequest, err.Error())
		default:
			writeJSON(w, http.StatusCreated, res)
		}
	}))
	m.HandleFunc("GET /v2/messages/{messageId}", auth(func(w http.ResponseWriter, r *http.Request) {
		info, ok := s.MessageInfo(r.PathValue("messageId"))
		if !ok {
			writeError(w, http.StatusNotFound, "message not found")
			return
		}
		writeJSON(w, http.StatusOK, info.Message)
	}))

	// Anything else under /v2/ (URL groups, queues, schedules…) is not
	// emulated: say so in QStash's error shape rather than ServeMux's text.
	m.HandleFunc("/v2/", auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not emulated: "+r.Method+" "+r.URL.Path)
	}))
	m.HandleFunc("/_sim/qstash/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no control endpoint "+r.Method+" "+r.URL.Path+"; see /_sim/qstash/stats, faults, signing, messages/{id}")
	})

	// The control API: no authentication, as hubspotsim's /_sim/.
	m.HandleFunc("GET /_sim/qstash/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	m.HandleFunc("POST /_sim/qstash/stats/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	})
	m.HandleFunc("GET /_sim/qstash/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.CurrentFaults())
	})
	m.HandleFunc("PUT /_sim/qstash/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Faults
		if !decodeCtl(w, r, &f) {
			return
		}
		if err := s.SetFaults(f); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, f)
	})
	m.HandleFunc("GET /_sim/qstash/signing", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.signingView())
	})
	m.HandleFunc("PUT /_sim/qstash/signing", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			SignWithNext *bool `json:"signWithNext"`
		}
		if !decodeCtl(w, r, &in) {
			return
		}
		if in.SignWithNext == nil {
			writeError(w, http.StatusBadRequest, `send {"signWithNext": true} or false`)
			return
		}
		s.SetSignWithNext(*in.SignWithNext)
		writeJSON(w, http.StatusOK, s.signingView())
	})
	m.HandleFunc("GET /_sim/qstash/messages/{messageId}", func(w http.ResponseWriter, r *http.Request) {
		info, ok := s.MessageInfo(r.PathValue("messageId"))
		if !ok {
			writeError(w, http.StatusNotFound, "message not found")
			return
		}
		writeJSON(w, http.StatusOK, info)
	})
}

// signingView names the key in use, never the keys themselves.
func (s *Server) signingView() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"signWithNext": s.signWithNext}
}

// ctlBodyMax bounds control request bodies.
const ctlBodyMax = 64 << 10

func decodeCtl(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, ctlBodyMax+1))
	if err == nil && len(b) > ctlBodyMax {
		writeError(w, http.StatusRequestEntityTooLarge, "body too large")
		return false
	}
	if err == nil {
		err = decodeStrict(b, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}
