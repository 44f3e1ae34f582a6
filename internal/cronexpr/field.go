package cronexpr

import (
	"fmt"
	"strconv"
	"strings"
)

// field is one position of a cron expression: its name for messages, its
// bounds and, for month and day-of-week, the names it accepts.
type field struct {
	name     string
	min, max int
	names    map[string]int
}

var (
	secondField = field{name: "second", min: 0, max: 59}
	minuteField = field{name: "minute", min: 0, max: 59}
	hourField   = field{name: "hour", min: 0, max: 23}
	domField    = field{name: "day-of-month", min: 1, max: 31}
	monthField  = field{name: "month", min: 1, max: 12, names: map[string]int{
		"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12,
	}}
	dowField = field{name: "day-of-week", min: 0, max: 6, names: map[string]int{
		"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6,
	}}
)

// fieldsWithSeconds is the order of a 6-field expression; a 5-field one
// omits the first.
var fieldsWithSeconds = [6]field{secondField, minuteField, hourField, domField, monthField, dowField}

// check checks text against the grammar below, which is the part of
// robfig/cron's grammar this package accepts:
//
//	field = item { "," item }
//	item  = span [ "/" step ]
//	span  = "*" | "?" | value [ "-" value ]
//	value = digits | name      (names: month and day-of-week, any case)
//
// robfig/cron reads "v/step" as "v-max/step". Beyond robfig/cron it refuses
// empty list items, text after "*" ("*-5"), signs, and a step larger than
// the number of values in the field (which could only ever select the
// span's start). It reports whether the field is a single item spanning
// the whole range ("*", "*/n", "0-23", "0/n" for hours): a wildcard. On
// failure it returns the rule broken, naming the field.
func (f field) check(text string) (wildcard bool, rule string) {
	items := strings.Split(text, ",")
	for _, item := range items {
		if item == "" {
			return false, fmt.Sprintf("%s field %q: empty list item", f.name, clip(text))
		}
		lo, hi, rule := f.checkItem(item)
		if rule != "" {
			return false, fmt.Sprintf("%s field %q: %s", f.name, clip(text), rule)
		}
		wildcard = len(items) == 1 && lo == f.min && hi == f.max
	}
	return wildcard, ""
}

// checkItem checks one list item and returns the span it covers.
func (f field) checkItem(item string) (lo, hi int, rule string) {
	span, step, stepped := strings.Cut(item, "/")
	if stepped {
		n, ok := number(step)
		width := f.max - f.min + 1
		switch {
		case !ok:
			return 0, 0, fmt.Sprintf("step %q is not a number", clip(step))
		case n < 1:
			return 0, 0, "step must be at least 1"
		case n > width:
			return 0, 0, fmt.Sprintf("step %d is larger than the field's %d values (it would select only the start)", n, width)
		}
	}
	if span == "*" || span == "?" {
		return f.min, f.max, ""
	}
	if strings.HasPrefix(span, "*") || strings.HasPrefix(span, "?") {
		return 0, 0, fmt.Sprintf("%q: a wildcard stands alone (write \"*\" or \"*/step\")", clip(item))
	}
	first, last, ranged := strings.Cut(span, "-")
	lo, rule = f.value(first)
	if rule != "" {
		return 0, 0, rule
	}
	switch {
	case ranged:
		if hi, rule = f.value(last); rule != "" {
			return 0, 0, rule
		}
		if lo > hi {
			return 0, 0, fmt.Sprintf("range %q starts after it ends", clip(span))
		}
	case stepped:
		hi = f.max // "v/step" is "v-max/step"
	default:
		hi = lo
	}
	return lo, hi, ""
}

// value reads a number or name within the field's bounds.
func (f field) value(text string) (int, string) {
	if text == "" {
		return 0, "missing value"
	}
	if n, ok := f.names[strings.ToLower(text)]; ok && isASCIILetters(text) {
		return n, ""
	}
	n, ok := number(text)
	if !ok {
		if f.names != nil {
			return 0, fmt.Sprintf("%q is not a number or a %s name", clip(text), f.name)
		}
		return 0, fmt.Sprintf("%q is not a number", clip(text))
	}
	if n < f.min || n > f.max {
		return 0, fmt.Sprintf("%s out of range %d-%d", clipNumber(text), f.min, f.max)
	}
	return n, ""
}

// maxDigits bounds the digits of a number: enough for any field, few enough
// that parsing cannot overflow.
const maxDigits = 4

// number parses ASCII decimal digits (no sign). Longer numbers than
// maxDigits are returned as maxInt-like values that fail every bound.
func number(text string) (int, bool) {
	if text == "" {
		return 0, false
	}
	for i := 0; i < len(text); i++ {
		if text[i] < '0' || text[i] > '9' {
			return 0, false
		}
	}
	digits := strings.TrimLeft(text, "0")
	if len(digits) > maxDigits {
		return 1 << 30, true
	}
	n, err := strconv.Atoi("0" + digits)
	return n, err == nil
}

// clipNumber quotes a long number by its length rather than in full.
func clipNumber(text string) string {
	if len(text) <= 12 {
		return text
	}
	return fmt.Sprintf("a %d-digit number", len(text))
}

func isASCIILetters(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
