package console

import (
	"errors"
	"fmt"
)

// ErrInvalidOption: New was given a nil Inspector, a nil option or an
// option whose value breaks its rule; the message names the rule.
var ErrInvalidOption = errors.New("console: invalid option")

// invalid returns an error of op wrapping ErrInvalidOption.
func invalid(op, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidOption, op, fmt.Sprintf(format, args...))
}
