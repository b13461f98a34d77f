package hubspotsim

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// controlRoutes registers the unauthenticated /_sim/ control API; it is
// neither rate limited nor fault-injected.
func (s *Server) controlRoutes() {
	m := s.mux
	m.HandleFunc("POST /_sim/objects/{type}", s.ctlCreate)
	m.HandleFunc("PATCH /_sim/objects/{type}/{id}", s.ctlUpdate)
	m.HandleFunc("DELETE /_sim/objects/{type}/{id}", s.ctlDelete)
	m.HandleFunc("POST /_sim/objects/{type}/merge", s.ctlMerge)
	m.HandleFunc("GET /_sim/objects/{type}", func(w http.ResponseWriter, r *http.Request) {
		objs := s.Objects(r.PathValue("type"))
		if objs == nil {
			objs = []Object{}
		}
		writeJSON(w, http.StatusOK, objs)
	})
	m.HandleFunc("GET /_sim/objects/{type}/{id}", func(w http.ResponseWriter, r *http.Request) {
		o, ok := s.Object(r.PathValue("type"), r.PathValue("id"))
		if !ok {
			ctlError(w, http.StatusNotFound, ErrNotFound)
			return
		}
		writeJSON(w, http.StatusOK, o)
	})
	m.HandleFunc("GET /_sim/objects", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		names := s.objectTypesLocked()
		s.mu.Unlock()
		all := map[string][]Object{}
		for _, n := range names {
			objs := s.Objects(n)
			if objs == nil {
				objs = []Object{}
			}
			all[n] = objs
		}
		writeJSON(w, http.StatusOK, all)
	})
	m.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.CurrentFaults())
	})
	m.HandleFunc("PUT /_sim/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Faults
		if !decodeCtl(w, r, &f) {
			return
		}
		if err := s.SetFaults(f); err != nil {
			ctlError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, f)
	})
	m.HandleFunc("PUT /_sim/limits", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			TenSecond int `json:"tenSecond"`
			Daily     int `json:"daily"`
		}
		if !decodeCtl(w, r, &in) {
			return
		}
		s.SetLimits(in.TenSecond, in.Daily)
		s.mu.Lock()
		out := map[string]int{"tenSecond": s.tenSecond, "daily": s.daily}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, out)
	})
	m.HandleFunc("PUT /_sim/webhooks", func(w http.ResponseWriter, r *http.Request) {
		var in WebhookSwitch
		if !decodeCtl(w, r, &in) {
			return
		}
		if in.DropNext < 0 {
			ctlError(w, http.StatusBadRequest, errors.New("dropNext must not be negative"))
			return
		}
		s.SetWebhooks(in)
		writeJSON(w, http.StatusOK, in)
	})
	m.HandleFunc("GET /_sim/counters", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Counters())
	})
	m.HandleFunc("POST /_sim/counters/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.ResetCounters()
		w.WriteHeader(http.StatusNoContent)
	})
}

func decodeCtl(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return false
	}
	return true
}

func ctlError(w http.ResponseWriter, status int, err error) {
	body := map[string]any{"status": "error", "message": err.Error()}
	var ce *ConflictError
	switch {
	case errors.As(err, &ce):
		status = http.StatusConflict
		body["existingId"] = ce.ExistingID
	case errors.Is(err, ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		status = http.StatusBadRequest
	}
	writeJSON(w, status, body)
}

type ctlProps struct {
	Properties map[string]string `json:"properties"`
}

func (s *Server) ctlCreate(w http.ResponseWriter, r *http.Request) {
	var in ctlProps
	if !decodeCtl(w, r, &in) {
		return
	}
	id, err := s.UserCreate(r.PathValue("type"), in.Properties)
	if err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	o, _ := s.Object(r.PathValue("type"), id)
	writeJSON(w, http.StatusCreated, o)
}

func (s *Server) ctlUpdate(w http.ResponseWriter, r *http.Request) {
	var in ctlProps
	if !decodeCtl(w, r, &in) {
		return
	}
	if err := s.UserUpdate(r.PathValue("type"), r.PathValue("id"), in.Properties); err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	o, _ := s.Object(r.PathValue("type"), r.PathValue("id"))
	writeJSON(w, http.StatusOK, o)
}

func (s *Server) ctlDelete(w http.ResponseWriter, r *http.Request) {
	if err := s.UserDelete(r.PathValue("type"), r.PathValue("id")); err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) ctlMerge(w http.ResponseWriter, r *http.Request) {
	var in struct {
		PrimaryObjectID string `json:"primaryObjectId"`
		ObjectIDToMerge string `json:"objectIdToMerge"`
	}
	if !decodeCtl(w, r, &in) {
		return
	}
	if err := s.UserMerge(r.PathValue("type"), in.PrimaryObjectID, in.ObjectIDToMerge); err != nil {
		ctlError(w, http.StatusBadRequest, err)
		return
	}
	o, _ := s.Object(r.PathValue("type"), in.PrimaryObjectID)
	writeJSON(w, http.StatusOK, o)
}
