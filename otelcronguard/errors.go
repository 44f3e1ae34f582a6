package otelcronguard

import (
	"errors"
	"fmt"
)

// ErrInvalidArgument: an option broke a rule; the message names the rule.
// Errors New returns for bad options wrap it.
var ErrInvalidArgument = errors.New("otelcronguard: invalid argument")

func invalidOption(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
}
