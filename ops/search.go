package ops

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/hubsync/hubsync/store"
)

// DeadLetterScanMax bounds the dead letters one search reads: a search by
// object type or error text filters the queue's dead letters page by page, and
// stops there (DeadLetterPage.Next then says where to go on).
const DeadLetterScanMax = 20000

// DeadLetterSearch selects dead letters of one queue by exact key and object
// type and by a piece of their error text.
type DeadLetterSearch struct {
	Direction store.Direction
	// Key is the exact Source or Destination; empty means all.
	Key string
	// ObjectType is exact; empty means all.
	ObjectType string
	// ErrorContains is matched case-insensitively in the error message; empty
	// means all.
	ErrorContains string
	// Limit defaults to DeadLetterLimitDefault and is capped at DeadLetterLimitMax.
	Limit int
	// After pages: only ids greater than this one.
	After string
}

// DeadLetterPage is one page of a search.
type DeadLetterPage struct {
	DeadLetters []DeadLetter `json:"dead_letters"`
	// Next is the After of the next page; empty when the queue has no more
	// dead letters.
	Next string `json:"next,omitempty"`
}

func (s DeadLetterSearch) matches(d DeadLetter) bool {
	if s.ObjectType != "" && d.ObjectType != s.ObjectType {
		return false
	}
	return s.ErrorContains == "" || strings.Contains(strings.ToLower(d.ErrorMessage), strings.ToLower(s.ErrorContains))
}

// SearchDeadLetters lists the dead letters matching s, ids ascending, reading
// at most DeadLetterScanMax of them.
func SearchDeadLetters(ctx context.Context, st store.Store, s DeadLetterSearch) (DeadLetterPage, error) {
	if s.Limit < 0 {
		return DeadLetterPage{}, fmt.Errorf("%w: limit %d is negative", ErrBadRequest, s.Limit)
	}
	if len(s.ErrorContains) > 200 {
		return DeadLetterPage{}, fmt.Errorf("%w: the error text to search has %d bytes; use at most 200", ErrBadRequest, len(s.ErrorContains))
	}
	limit := min(cmp.Or(s.Limit, DeadLetterLimitDefault), DeadLetterLimitMax)
	page := DeadLetterPage{DeadLetters: []DeadLetter{}}
	after, scanned := s.After, 0
	for scanned < DeadLetterScanMax {
		dls, err := ListDeadLetters(ctx, st, DeadLetterQuery{Direction: s.Direction, Key: s.Key, Limit: DeadLetterLimitMax, After: after})
		if err != nil {
			return DeadLetterPage{}, err
		}
		for _, d := range dls {
			scanned++
			after = d.ID
			if s.matches(d) {
				page.DeadLetters = append(page.DeadLetters, d)
				if len(page.DeadLetters) == limit {
					page.Next = d.ID
					return page, nil
				}
			}
		}
		if len(dls) < DeadLetterLimitMax {
			return page, nil
		}
	}
	page.Next = after
	return page, nil
}

// RetryMatching re-queues every dead letter matching s (Limit and After are
// ignored), as RetryDeadLetters does, in batches of DeadLetterLimitMax.
func RetryMatching(ctx context.Context, st store.Store, s DeadLetterSearch) (RetryResult, error) {
	s.Limit, s.After = DeadLetterLimitMax, ""
	var res RetryResult
	for {
		page, err := SearchDeadLetters(ctx, st, s)
		if err != nil {
			return res, err
		}
		if len(page.DeadLetters) > 0 {
			ids := make([]string, len(page.DeadLetters))
			for i, d := range page.DeadLetters {
				ids[i] = d.ID
			}
			r, err := RetryDeadLetters(ctx, st, RetryRequest{Direction: s.Direction, IDs: ids})
			res.Requeued += r.Requeued
			if err != nil {
				return res, err
			}
		}
		if page.Next == "" {
			return res, nil
		}
		s.After = page.Next
	}
}
