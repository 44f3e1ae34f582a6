package cronexpr

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/robfig/cron/v3"
)

// MaxLength is the longest expression Parse accepts, in bytes.
const MaxLength = 1024

// Expr is a parsed cron expression in its location. It is immutable and
// safe for concurrent use.
type Expr struct {
	text     string
	loc      *time.Location
	fields   fieldSet
	realTime bool
}

// Location returns the location the expression is read in: the zone of its
// TZ= or CRON_TZ= prefix, else the location given to Parse.
func (e *Expr) Location() *time.Location { return e.loc }

// FollowsRealTime reports whether the hour field is a wildcard ("*", "?",
// a step over all hours such as "*/2", "0-23/3" or "0/4", the full range
// "0-23", or "@hourly"): then every instant whose wall time matches is an
// occurrence, so a repeated hour runs twice and a skipped hour not at all.
// Otherwise each listed wall time runs once per local day (see the package
// documentation).
func (e *Expr) FollowsRealTime() bool { return e.realTime }

// String returns the expression as given to Parse.
func (e *Expr) String() string { return e.text }

// descriptors maps each accepted descriptor to whether its hour is a
// wildcard (robfig/cron supplies their fields).
var descriptors = map[string]bool{
	"@yearly": false, "@annually": false, "@monthly": false, "@weekly": false,
	"@daily": false, "@midnight": false, "@hourly": true,
}

// cronParser reads the field text this package has checked into bitsets.
var cronParser = cron.NewParser(cron.Second | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Parse parses expr: 5 fields (minute hour day-of-month month day-of-week)
// or 6 (with a leading seconds field), or one of the descriptors @yearly,
// @annually, @monthly, @weekly, @daily, @midnight and @hourly, optionally
// preceded by "TZ=<zone>" or "CRON_TZ=<zone>" and whitespace. Fields are
// separated by any whitespace. The expression is read in loc (nil means
// UTC) unless it names its own zone. Every error wraps ErrInvalid and
// names the rule broken; no input panics.
func Parse(expr string, loc *time.Location) (*Expr, error) {
	if len(expr) > MaxLength {
		return nil, invalid(expr, "longer than %d bytes (%d)", MaxLength, len(expr))
	}
	if !utf8.ValidString(expr) {
		return nil, invalid(expr, "not valid UTF-8")
	}
	body := strings.TrimSpace(expr)
	if body == "" {
		return nil, invalid(expr, "expression must not be empty")
	}
	if loc == nil {
		loc = time.UTC
	}
	body, loc, err := zonePrefix(expr, body, loc)
	if err != nil {
		return nil, err
	}
	if IsLocal(loc) {
		return nil, invalid(expr, "location %q is the zone of the machine that reads it, which replicas may not share: name an IANA zone", loc)
	}
	if _, off := time.Unix(946684800, 0).In(loc).Zone(); abs(off) > maxShift/2 { // 2000-01-01
		return nil, invalid(expr, "location %q has UTC offset %s, beyond the ±24h supported", loc, time.Duration(off)*time.Second)
	}
	text, realTime, err := checkFields(expr, body)
	if err != nil {
		return nil, err
	}
	fields, err := bitsets(expr, text)
	if err != nil {
		return nil, err
	}
	if !fields.fires() {
		return nil, invalid(expr, "never fires: no date matches its day-of-month, month and day-of-week fields")
	}
	return &Expr{text: expr, loc: loc, fields: fields, realTime: realTime}, nil
}

// IsLocal reports whether loc is time.Local, or a location by that name (a
// fixed zone called "Local" is indistinguishable from it by name): the zone
// of whichever machine reads it, on which replicas, and a reader of their
// registrations, may disagree.
func IsLocal(loc *time.Location) bool { return loc == time.Local || loc.String() == "Local" }

// zonePrefix splits off a TZ=<zone> or CRON_TZ=<zone> prefix and loads the
// zone; without a prefix it returns body and loc unchanged.
func zonePrefix(expr, body string, loc *time.Location) (string, *time.Location, error) {
	prefix := ""
	for _, p := range []string{"TZ=", "CRON_TZ="} {
		if strings.HasPrefix(body, p) {
			prefix = p
		}
	}
	if prefix == "" {
		return body, loc, nil
	}
	rest := body[len(prefix):]
	cut := strings.IndexFunc(rest, unicode.IsSpace)
	if cut < 0 {
		return "", nil, invalid(expr, "%s<zone> must be followed by whitespace and the fields", prefix)
	}
	zone := rest[:cut]
	body = strings.TrimSpace(rest[cut:])
	switch {
	case zone == "":
		return "", nil, invalid(expr, "%s needs a zone name, such as %sEurope/Berlin", prefix, prefix)
	case zone == "Local":
		return "", nil, invalid(expr, "zone %q is the machine's own zone, which replicas may not share: name an IANA zone", zone)
	case strings.HasPrefix(body, "TZ=") || strings.HasPrefix(body, "CRON_TZ="):
		return "", nil, invalid(expr, "at most one TZ= or CRON_TZ= prefix")
	}
	named, err := time.LoadLocation(zone)
	if err != nil {
		return "", nil, &parseError{expr: expr, rule: fmt.Sprintf("unknown time zone %q: %v", clip(zone), err), cause: err}
	}
	return body, named, nil
}

// checkFields checks the body (fields or a descriptor) and returns the
// text to hand robfig/cron's parser, always 6 fields or a descriptor, and
// whether the hour field is a wildcard.
func checkFields(expr, body string) (text string, realTime bool, err error) {
	fields := strings.Fields(body)
	if len(fields) == 0 {
		return "", false, invalid(expr, "expression has no fields")
	}
	if strings.HasPrefix(fields[0], "@") {
		switch name := fields[0]; {
		case name == "@every" || strings.HasPrefix(name, "@every"):
			return "", false, invalid(expr, "@every counts from when the schedule is loaded, so replicas cannot agree on its occurrences; use scheduler.Every, which is aligned to the Unix epoch")
		case len(fields) != 1:
			return "", false, invalid(expr, "descriptor %s takes no fields after it", clip(name))
		default:
			wildcard, ok := descriptors[name]
			if !ok {
				return "", false, invalid(expr, "unknown descriptor %q: want @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", clip(name))
			}
			return name, wildcard, nil
		}
	}
	switch len(fields) {
	case 5:
		fields = append([]string{"0"}, fields...)
	case 6:
	default:
		return "", false, invalid(expr, "want 5 fields (minute hour dom month dow) or 6 (with leading seconds), got %d", len(fields))
	}
	for i, f := range fieldsWithSeconds {
		wildcard, rule := f.check(fields[i])
		if rule != "" {
			return "", false, invalid(expr, "%s", rule)
		}
		if f.name == hourField.name {
			realTime = wildcard
		}
	}
	return strings.Join(fields, " "), realTime, nil
}

// bitsets hands checked text to robfig/cron's parser and returns the field
// bitsets. The recover is a last line of defence: the text has passed
// checkFields, whose grammar is stricter than the parser's, but a panic in
// a dependency must reach the caller as an error, never crash the process.
func bitsets(expr, text string) (fields fieldSet, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &parseError{expr: expr, rule: fmt.Sprintf("parser failed: %v", r), cause: errParserPanic}
		}
	}()
	parsed, err := cronParser.Parse(text)
	if err != nil {
		return fieldSet{}, &parseError{expr: expr, rule: err.Error(), cause: err}
	}
	spec, ok := parsed.(*cron.SpecSchedule)
	if !ok {
		return fieldSet{}, invalid(expr, "not a calendar schedule")
	}
	return fieldSet{
		second: spec.Second, minute: spec.Minute, hour: spec.Hour,
		dom: spec.Dom, month: spec.Month, dow: spec.Dow,
	}, nil
}

// fires reports whether some wall time is listed. Whether a date matches
// depends on its month, day and weekday; every month of every year has
// every weekday, and the eight years from 2000 hold two 29ths of
// February, so an expression that matches any date matches one in them.
func (f *fieldSet) fires() bool {
	from := wallOf(2000, time.January, 1)
	_, ok := f.nextWall(from-1, wallOf(2008, time.January, 1))
	return ok
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
