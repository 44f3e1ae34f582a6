// Package leasekit holds what cronguard's lease stores (lease/redislease,
// lease/memory) and the packages that read them share but do not publish:
// lease IDs, the hashes in which keys and IDs are shown, storage keys and
// key prefixes, and the drift allowance of a local deadline. Keeping them
// here leaves them free to change without changing package lease's API.
package leasekit

import "errors"

// ErrInvalidArgument is package lease's ErrInvalidArgument (lease defines
// its exported sentinel as this value), so that the rules checked here
// fail with the error users branch on.
var ErrInvalidArgument = errors.New("lease: invalid argument")

// invalid returns an ErrInvalidArgument error naming the broken rule.
func invalid(format string, args ...any) error {
	return &ruleError{msg: sprintf(format, args...)}
}
