// Package modeltest holds hubsync's model test: a deterministic, seeded
// simulation of several replicas with skewed clocks on one database, the
// HubSpot simulator's users, an adversarial webhook network (duplicates,
// drops with later redelivery, delays, reordering), worker crashes and lease
// expiries. It drives the real store, receiver, inbound worker, records
// service and outbound worker one step at a time, so a seed is reproducible,
// and after quiescence checks that both sides agree, that nothing deleted came
// back, that no local record has two HubSpot objects, and that no change
// applied from HubSpot was sent back to it.
//
// The package has no non-test code. Run more seeds with
//
//	go test ./internal/modeltest -seeds 2000
//	HUBSYNC_MODEL_SEEDS=2000 go test ./internal/modeltest
//
// and one seed, with its trace, with -seed N -v.
package modeltest
