package subscriptions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hubsync/hubsync/hubspot"
	"github.com/hubsync/hubsync/mapping"
	"github.com/hubsync/hubsync/outbound"
	"github.com/hubsync/hubsync/store"
)

// HubSpot is the part of *hubspot.Client a Pusher calls.
type HubSpot interface {
	Subscribe(ctx context.Context, in hubspot.SubscribeInput) (*hubspot.SubscriptionStatus, error)
	Unsubscribe(ctx context.Context, in hubspot.SubscribeInput) (*hubspot.SubscriptionStatus, error)
}

var _ HubSpot = (*hubspot.Client)(nil)

// Pusher is the outbound.Handler of ObjectType: register it in
// outbound.Config.Handlers. For one contact's claimed events it sends
// HubSpot the newest request's state, once, and settles every event:
//
//   - an event not newer than the contact's state completes without a call
//     (superseded when older, synced when it is the state);
//   - success, or "already in that state": the state advances, the newest
//     request is synced, older pending ones superseded;
//   - the contact opted out of all email (on subscribe): the newest request
//     is failed with that reason and the events complete, since no retry can
//     succeed until the contact opts back in;
//   - an invalid subscription id, or a pair no longer mapped: dead letter
//     with the reason (a mapping error an operator must fix, then re-queue);
//   - contact unknown: retried (the contact may be created by a later push),
//     a dead letter after the store's MaxAttempts, then the request is failed;
//   - transient errors and 429: retried; 401/403: released.
type Pusher struct {
	store   *Store
	hubspot HubSpot
	mapping *mapping.Set
	log     *slog.Logger
}

// NewPusher returns the Pusher of st's requests.
func NewPusher(st *Store, hs HubSpot, m *mapping.Set, log *slog.Logger) *Pusher {
	return &Pusher{store: st, hubspot: hs, mapping: m, log: cmp.Or(log, slog.Default())}
}

var (
	_ outbound.Handler      = (*Pusher)(nil)
	_ outbound.DeadLetterer = (*Pusher)(nil)
)

// Push implements outbound.Handler.
func (p *Pusher) Push(ctx context.Context, evs []store.OutboundEvent, calls outbound.Calls) []outbound.Outcome {
	outs := make([]outbound.Outcome, len(evs))
	all := func(o outbound.Outcome) []outbound.Outcome {
		for i := range outs {
			outs[i] = o
		}
		return outs
	}
	pays := make([]eventPayload, len(evs))
	for i, e := range evs {
		if err := json.Unmarshal(e.Payload, &pays[i]); err != nil || pays[i].RequestID == "" {
			outs[i] = outbound.Outcome{Action: outbound.ActionFail, Reason: fmt.Sprintf("subscriptions: unreadable event payload: %v", err)}
		}
	}
	var first eventPayload
	for i, pay := range pays {
		if outs[i].Action != outbound.ActionFail {
			first = pay // every event of the group is of one contact
			break
		}
	}
	if first.RequestID == "" {
		return outs
	}
	state, err := p.store.State(ctx, first.BrandID, first.ProductID, first.ContactKey)
	if err != nil {
		return all(outbound.Outcome{Action: outbound.ActionRelease})
	}
	newest, err := p.store.Newest(ctx, first.BrandID, first.ProductID, first.ContactKey)
	if err != nil {
		return all(outbound.Outcome{Action: outbound.ActionRelease})
	}
	var due []int // events newer than the state
	for i, pay := range pays {
		switch {
		case outs[i].Action == outbound.ActionFail:
		case pay.Sequence < state.AppliedSequence:
			p.setStatus(ctx, pay.RequestID, StatusSuperseded, "")
			outs[i] = outbound.Outcome{Action: outbound.ActionSuperseded}
		case pay.Sequence == state.AppliedSequence:
			outs[i] = outbound.Outcome{Action: outbound.ActionComplete}
		default:
			due = append(due, i)
		}
	}
	if len(due) == 0 {
		return outs
	}
	set := func(o outbound.Outcome) {
		for _, i := range due {
			outs[i] = o
		}
	}
	sub, ok := p.mapping.Subscription(newest.BrandID, newest.ProductID)
	if !ok {
		set(outbound.Outcome{Action: outbound.ActionFail, Reason: fmt.Sprintf("subscriptions: brand %s product %s is no longer mapped to a HubSpot subscription; map it and re-queue", newest.BrandID, newest.ProductID)})
		p.setStatus(ctx, newest.ID, StatusFailed, "not mapped")
		return outs
	}
	granted, retryAfter, err := calls(ctx, 1)
	switch {
	case err != nil:
		set(outbound.Outcome{Action: outbound.ActionRelease})
		return outs
	case !granted:
		set(outbound.Outcome{Action: outbound.ActionRelease, Delay: retryAfter, BudgetDenied: true})
		return outs
	}
	in := hubspot.SubscribeInput{EmailAddress: newest.ContactKey, SubscriptionID: sub.SubscriptionID}
	if newest.DesiredState == StateSubscribed {
		_, err = p.hubspot.Subscribe(ctx, in)
	} else {
		_, err = p.hubspot.Unsubscribe(ctx, in)
	}
	done := func(status, detail string) {
		if _, err := p.store.Settle(context.WithoutCancel(ctx), newest, status, detail); err != nil {
			set(outbound.Outcome{Action: outbound.ActionRetry, Reason: err.Error(), Calls: 1})
			return
		}
		for n, i := range due {
			outs[i] = outbound.Outcome{Action: outbound.ActionComplete}
			if n == 0 {
				outs[i].Calls = 1 // the one call made for them all
			}
			if pays[i].Sequence < newest.AppliedSequence {
				outs[i].Action = outbound.ActionSuperseded
			}
		}
	}
	failure := hubspot.CommPrefsFailureOf(err)
	switch {
	case err == nil, failure == hubspot.CommPrefsAlreadyInState:
		done(StatusSynced, "")
	case failure == hubspot.CommPrefsOptedOut:
		done(StatusFailed, "contact opted out of all email; only the contact can opt back in")
	case failure == hubspot.CommPrefsInvalidSubscription:
		reason := fmt.Sprintf("subscriptions: HubSpot subscription %s of brand %s product %s does not exist: %v", sub.SubscriptionID, newest.BrandID, newest.ProductID, err)
		set(outbound.Outcome{Action: outbound.ActionFail, Reason: reason, Calls: 1})
		for _, i := range due {
			p.setStatus(ctx, pays[i].RequestID, StatusFailed, "invalid subscription id "+sub.SubscriptionID)
		}
	case failure == hubspot.CommPrefsContactUnknown:
		set(outbound.Outcome{Action: outbound.ActionRetry, Reason: fmt.Sprintf("subscriptions: HubSpot has no contact %s: %v", newest.ContactKey, err), Calls: 1})
	case errors.Is(err, hubspot.ErrAuth):
		set(outbound.Outcome{Action: outbound.ActionRelease, Delay: outbound.AuthRetryDelayDefault, Calls: 1})
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		// Our own stop (a hard stop, or a QStash delivery whose caller went
		// away), not HubSpot's answer: released, as records are, without
		// using an attempt.
		set(outbound.Outcome{Action: outbound.ActionRelease, Calls: 1})
	default:
		set(outbound.Outcome{Action: outbound.ActionRetry, Reason: err.Error(), Delay: hubspot.RetryAfterOf(err), Calls: 1})
	}
	return outs
}

// DeadLettered implements outbound.DeadLetterer: the request of an event out
// of attempts is failed with the reason.
func (p *Pusher) DeadLettered(ctx context.Context, ev store.OutboundEvent, reason string) {
	var pay eventPayload
	if json.Unmarshal(ev.Payload, &pay) == nil && pay.RequestID != "" {
		p.setStatus(ctx, pay.RequestID, StatusFailed, reason)
	}
}

func (p *Pusher) setStatus(ctx context.Context, id, status, detail string) {
	if err := p.store.SetStatus(context.WithoutCancel(ctx), id, status, detail); err != nil {
		p.log.Warn("subscriptions: set request status", "id", id, "status", status, "err", err)
	}
}
