package qstashsim

import (
	"net/http"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// dlqPageMax is the most DLQ messages per page, QStash's default and maximum.
const dlqPageMax = 100

type dlqEntry struct {
	seq    uint64
	id     string
	msg    *message
	status int
	header http.Header
	body   []byte
	at     time.Time
}

// Message is a message as QStash's API shows it (GET /v2/messages/{id}, and
// inside DLQ entries).
type Message struct {
	MessageID string      `json:"messageId"`
	URL       string      `json:"url"`
	Method    string      `json:"method"`
	Header    http.Header `json:"header"`
	// Body is the body when it is UTF-8, BodyBase64 otherwise.
	Body       string `json:"body,omitempty"`
	BodyBase64 []byte `json:"bodyBase64,omitempty"`
	MaxRetries int    `json:"maxRetries"`
	// NotBefore and CreatedAt are Unix milliseconds.
	NotBefore      int64  `json:"notBefore"`
	CreatedAt      int64  `json:"createdAt"`
	CallerIP       string `json:"callerIP,omitempty"`
	FlowControlKey string `json:"flowControlKey,omitempty"`
}

// DLQMessage is a DLQ entry: the message and the last failed answer.
type DLQMessage struct {
	Message
	DLQID              string      `json:"dlqId"`
	ResponseStatus     int         `json:"responseStatus,omitempty"`
	ResponseHeader     http.Header `json:"responseHeader,omitempty"`
	ResponseBody       string      `json:"responseBody,omitempty"`
	ResponseBodyBase64 []byte      `json:"responseBodyBase64,omitempty"`
}

// MessageInfo is a message with the emulator's view of its delivery, for
// tests and the demo.
type MessageInfo struct {
	Message
	// State is CREATED, ACTIVE, RETRY, DELIVERED or ERROR (in the DLQ).
	State string `json:"state"`
	// Retried is how many retries were scheduled.
	Retried int `json:"retried"`
	// Delays are the unscaled waits chosen before each retry.
	Delays []time.Duration `json:"delays"`
	// Deliveries counts attempts that reached the receiver (duplicates included).
	Deliveries int `json:"deliveries"`
}

func (m *message) view() Message {
	v := Message{
		MessageID: m.id, URL: m.url, Method: m.opts.method, Header: m.opts.header.Clone(),
		MaxRetries: m.opts.retries, CreatedAt: m.createdAt.UnixMilli(), CallerIP: m.callerIP,
		FlowControlKey: m.opts.flowKey,
	}
	if v.Header == nil {
		v.Header = http.Header{}
	}
	if !m.opts.notBefore.IsZero() {
		v.NotBefore = m.opts.notBefore.UnixMilli()
	}
	if utf8.Valid(m.body) {
		v.Body = string(m.body)
	} else {
		v.BodyBase64 = m.body
	}
	return v
}

func (e *dlqEntry) view() DLQMessage {
	v := DLQMessage{Message: e.msg.view(), DLQID: e.id, ResponseStatus: e.status, ResponseHeader: e.header}
	if utf8.Valid(e.body) {
		v.ResponseBody = string(e.body)
	} else {
		v.ResponseBodyBase64 = e.body
	}
	return v
}

func (s *Server) toDLQLocked(m *message, res deliveryResult) {
	m.state = stateError
	s.dlqSeq++
	e := &dlqEntry{seq: s.dlqSeq, msg: m, status: res.status, header: res.header, body: res.body, at: s.cfg.Now()}
	e.id = strconv.FormatUint(e.seq, 10) + "-" + m.id
	s.dlq = append(s.dlq, e)
	s.stats.DLQ++
	s.log.Debug("qstashsim: message to the DLQ", "message", m.id, "status", res.status, "err", res.err)
}

// MessageInfo returns a message by id.
func (s *Server) MessageInfo(id string) (MessageInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.msgs[id]
	if !ok {
		return MessageInfo{}, false
	}
	return MessageInfo{Message: m.view(), State: m.state, Retried: m.retried, Delays: slices.Clone(m.delays), Deliveries: m.deliveries}, true
}

// DLQ returns the DLQ, oldest first.
func (s *Server) DLQ() []DLQMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]DLQMessage, 0, len(s.dlq))
	for _, e := range s.dlq {
		out = append(out, e.view())
	}
	return out
}

func (s *Server) dlqIndexLocked(id string) int {
	return slices.IndexFunc(s.dlq, func(e *dlqEntry) bool { return e.id == id })
}

// RetryDLQ re-publishes a DLQ entry as a new message (same destination,
// body, headers and settings, overridden by the Upstash-* headers in h) and
// removes the entry, as POST /v2/dlq/retry/{dlqId} does. The new message is
// not deduplicated against the old one.
func (s *Server) RetryDLQ(dlqID string, h http.Header) (PublishResponse, error) {
	s.mu.Lock()
	i := s.dlqIndexLocked(dlqID)
	if i < 0 {
		s.mu.Unlock()
		return PublishResponse{}, ErrNotFound
	}
	e := s.dlq[i]
	s.mu.Unlock()
	opts, err := s.parsePublishHeaders(h, &e.msg.opts)
	if err != nil {
		return PublishResponse{}, err
	}
	s.mu.Lock()
	if i = s.dlqIndexLocked(dlqID); i < 0 { // retried or deleted meanwhile
		s.mu.Unlock()
		return PublishResponse{}, ErrNotFound
	}
	s.dlq = slices.Delete(s.dlq, i, i+1)
	s.mu.Unlock()
	id, dup, err := s.publish(e.msg.url, opts, e.msg.body, e.msg.callerIP)
	return PublishResponse{MessageID: id, Deduplicated: dup}, err
}

// DeleteDLQ removes a DLQ entry.
func (s *Server) DeleteDLQ(dlqID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.dlqIndexLocked(dlqID)
	if i < 0 {
		return ErrNotFound
	}
	s.dlq = slices.Delete(s.dlq, i, i+1)
	return nil
}

// dlqList answers GET /v2/dlq: earliest first, count per page (at most
// 100), filtered by messageId, url and responseStatus; the cursor is opaque.
func (s *Server) dlqList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	count := dlqPageMax
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			writeError(w, http.StatusBadRequest, "count must be a positive whole number")
			return
		}
		count = min(n, dlqPageMax)
	}
	var after uint64
	if v := q.Get("cursor"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid cursor; pass the cursor of the previous page as is")
			return
		}
		after = n
	}
	status := 0
	if v := q.Get("responseStatus"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "responseStatus must be an HTTP status code")
			return
		}
		status = n
	}
	msgID, url := q.Get("messageId"), q.Get("url")
	out := struct {
		Messages []DLQMessage `json:"messages"`
		Cursor   string       `json:"cursor,omitempty"`
	}{Messages: []DLQMessage{}}
	s.mu.Lock()
	for _, e := range s.dlq {
		if e.seq <= after || (msgID != "" && e.msg.id != msgID) || (url != "" && e.msg.url != url) || (status != 0 && e.status != status) {
			continue
		}
		if len(out.Messages) == count {
			out.Cursor = strconv.FormatUint(e.seq-1, 10)
			break
		}
		out.Messages = append(out.Messages, e.view())
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}
