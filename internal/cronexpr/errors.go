package cronexpr

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrInvalid is wrapped by every error Parse returns. The message names the
// expression and the rule it broke.
var ErrInvalid = errors.New("cronexpr: invalid expression")

// errParserPanic is wrapped, with ErrInvalid, by the error Parse returns
// when robfig/cron's parser panicked on text this package had checked. It
// means the checks missed a case; the fuzz target asserts it never happens.
var errParserPanic = errors.New("cronexpr: parser panicked")

// quoteLimit bounds how much of an expression an error message quotes.
const quoteLimit = 80

// parseError is a Parse error: "cronexpr: "<expr>": <rule>". It wraps
// ErrInvalid and, where there is one, the underlying cause (a zone that
// failed to load, a parser panic).
type parseError struct {
	expr  string
	rule  string
	cause error
}

func (e *parseError) Error() string {
	return fmt.Sprintf("cronexpr: %q: %s", clip(e.expr), e.rule)
}

func (e *parseError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.cause}
}

// invalid returns a Parse error for expr with the rule, formatted.
func invalid(expr, format string, args ...any) error {
	return &parseError{expr: expr, rule: fmt.Sprintf(format, args...)}
}

// clip shortens s for quoting in a message, on a rune boundary where s is
// valid UTF-8.
func clip(s string) string {
	if len(s) <= quoteLimit {
		return s
	}
	cut := quoteLimit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 {
		cut = quoteLimit
	}
	return s[:cut] + "..."
}
