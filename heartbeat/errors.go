package heartbeat

import "errors"

var (
	// ErrLeaseLost is the cause of a heartbeat context cancelled because the
	// store said, definitively, that the lease is no longer held.
	ErrLeaseLost = errors.New("heartbeat: lease lost")
	// ErrLeaseUnconfirmed is the cause of a heartbeat context cancelled
	// because no renewal could be confirmed before the lease's local deadline
	// minus the stop margin.
	ErrLeaseUnconfirmed = errors.New("heartbeat: lease renewal unconfirmed")
	// ErrInvalidOption is returned by Start for an option that breaks a rule;
	// the message names the rule.
	ErrInvalidOption = errors.New("heartbeat: invalid option")
	// ErrInvalidArgument is returned by Start for a nil context, store or
	// lease, or a lease that is not usable (malformed ID, invalid TTL, no
	// local deadline); the message names the rule.
	ErrInvalidArgument = errors.New("heartbeat: invalid argument")
	// ErrStopped is the cause of a heartbeat context cancelled by its Stop
	// function. It is not a loss: Stop returns nil in that case.
	ErrStopped = errors.New("heartbeat: stopped")
)
