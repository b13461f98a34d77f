package store

import (
	"errors"
	"fmt"
	"strings"
)

var (
	// ErrLeaseLost is returned by a fenced state change whose lease expired and
	// whose event was claimed again (or finished) by another worker. The change was
	// not applied.
	ErrLeaseLost = errors.New("store: lease lost")

	// ErrNotFound is returned when an event id does not exist.
	ErrNotFound = errors.New("store: not found")
)

// LeaseLostError lists the leases of a batch state change that were lost. The
// other leases of the batch were applied. It matches ErrLeaseLost with errors.Is.
type LeaseLostError struct {
	Leases []Lease
}

// Error lists the lost leases as id@attempt.
func (e *LeaseLostError) Error() string {
	ids := make([]string, 0, len(e.Leases))
	for _, l := range e.Leases {
		ids = append(ids, fmt.Sprintf("%s@%d", l.ID, l.Attempt))
	}
	return "store: lease lost for " + strings.Join(ids, ", ")
}

// Is reports whether target is ErrLeaseLost.
func (e *LeaseLostError) Is(target error) bool { return target == ErrLeaseLost }
