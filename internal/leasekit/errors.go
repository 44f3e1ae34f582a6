package leasekit

import "fmt"

// ruleError is an ErrInvalidArgument error whose message names the rule.
type ruleError struct{ msg string }

func (e *ruleError) Error() string { return ErrInvalidArgument.Error() + ": " + e.msg }

// Unwrap returns ErrInvalidArgument.
func (e *ruleError) Unwrap() error { return ErrInvalidArgument }

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }
