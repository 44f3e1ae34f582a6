// Package fleettest is the conformance suite of fleet.Store: the control
// plane's semantics (pause, triggers, run status and history, registry,
// control channel) that every store must share. lease/redislease and
// lease/memory run it. Like lease/leasetest, it needs only an isolated store and a way to
// let time pass on the store's clock.
package fleettest
