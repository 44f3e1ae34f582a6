// Package leasebench measures cronguard's Redis lease store side by side with
// the usual Go Redis locks (bsm/redislock, go-redsync, rueidislock) and with
// a floor: the cheapest correct lock on one Redis (SET NX PX, then a
// compare-and-delete script).
//
// Every contender talks to the same redis-server with the same concurrency.
// Measurements are taken in interleaved rounds (round r runs every
// contender, in an order rotated by r) so that slow drift on a shared
// machine hits all contenders alike, and each contender is reported as a
// ratio to the floor measured in the same round.
//
// It is a benchmark harness, not a library: nothing here is imported by
// cronguard, and the numbers it prints are only comparable within one run.
package leasebench
