package schedscale

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cronguard/cronguard/scheduler"
)

// schedulerOptions maps the name of a replica option ("name=value", the
// leasebench flag -scale-opt) to the scheduler option it makes. A nil
// option with a nil error means the value asks for the scheduler's default.
var schedulerOptions = map[string]func(value string) (scheduler.Option, error){
	"acquire-concurrency": func(v string) (scheduler.Option, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, err
		}
		return scheduler.WithAcquireConcurrency(n), nil
	},
	// claim: how the replicas share an occurrence. "preferred" (the
	// default with the control plane): a first choice per occurrence
	// claims it, a backup after scheduler.BackupGrace, the others not at
	// all. "racing": every replica claims every occurrence, as a scheduler
	// does without the control plane (scheduler.WithoutControlPlane: no
	// registry, run status or history either).
	"claim": func(v string) (scheduler.Option, error) {
		switch v {
		case "preferred":
			return nil, nil
		case "racing":
			return scheduler.WithoutControlPlane(), nil
		default:
			return nil, fmt.Errorf("this scheduler has no claim mode %q (known: preferred, racing)", v)
		}
	},
	// claim-lead: how far ahead of an occurrence its claim goes
	// (scheduler.WithClaimLead), a Go duration; 0 is the default.
	"claim-lead": func(v string) (scheduler.Option, error) {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, err
		}
		return scheduler.WithClaimLead(d), nil
	},
	"control-plane": func(v string) (scheduler.Option, error) {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, err
		}
		if on {
			return nil, nil
		}
		return scheduler.WithoutControlPlane(), nil
	},
}

// OptionNames returns the names SchedulerOptions knows, sorted.
func OptionNames() []string {
	names := make([]string, 0, len(schedulerOptions))
	for k := range schedulerOptions {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// SchedulerOptions returns the scheduler options that specs ("name=value")
// name.
func SchedulerOptions(specs []string) ([]scheduler.Option, error) {
	var opts []scheduler.Option
	for _, spec := range specs {
		name, value, ok := strings.Cut(spec, "=")
		mk := schedulerOptions[name]
		if !ok || mk == nil {
			return nil, fmt.Errorf("schedscale: option %q: want name=value with a name of %s", spec, strings.Join(OptionNames(), ", "))
		}
		opt, err := mk(value)
		if err != nil {
			return nil, fmt.Errorf("schedscale: option %q: %w", spec, err)
		}
		if opt != nil {
			opts = append(opts, opt)
		}
	}
	return opts, nil
}
