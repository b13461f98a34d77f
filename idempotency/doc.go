// Package idempotency gives HTTP write endpoints Idempotency-Key semantics:
// the first request under a key runs and its response is stored; a retry
// with the same key and the same request (method, path, body) is answered
// with the stored response, without running again; the same key with a
// different request is a 409. Keys expire after a retention (Cleanup).
//
// A key whose first request is still running answers 409 too. If the
// process dies between the write and storing its response, the key keeps
// answering 409 until it expires, rather than risk writing twice: the client
// should check the resource and use a new key. A first request answered
// with a 5xx, or whose handler panics, stores nothing: its key is forgotten
// and a retry runs again.
package idempotency
