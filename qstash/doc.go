// Package qstash speaks the two halves of Upstash QStash's wire protocol that
// hubsync needs for push dispatch: a publish client (Client.Publish, plain
// net/http, since the official Go SDK cannot send flow-control headers) and the
// receiver's check of the Upstash-Signature header (Verifier).
//
// It holds no state and no database access: package dispatch builds the
// publisher, the signed worker endpoint and the reconciliation on it.
package qstash
