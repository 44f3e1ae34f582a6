package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
)

// Exit codes (see usageText).
const (
	exitOK          = 0
	exitFailed      = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitRunFailed   = 4
	exitWaitTimeout = 5
)

// Defaults of the global flags.
const (
	envRedisURL     = "CRONGUARD_REDIS_URL"
	defaultRedisURL = "redis://localhost:6379"
	// opTimeout bounds each command's work with Redis (a trigger's wait
	// comes on top).
	opTimeout = 10 * time.Second
)

// env is what the command needs from its process: the output streams, the
// environment, who runs it and the local clock. Tests pass their own.
type env struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	by             func() string    // the default --by: user@host
	now            func() time.Time // the local clock, for the ages of replicas' times
}

// osEnv is the real process's env.
func osEnv(stdout, stderr io.Writer) env {
	return env{stdout: stdout, stderr: stderr, getenv: os.Getenv, by: userAtHost, now: time.Now}
}

// userAtHost names who runs the command: user@host.
func userAtHost() string {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	by := name + "@" + host
	if len(by) > lease.MaxOwnerLen {
		by = by[:lease.MaxOwnerLen]
	}
	return by
}

// globals are the flags every command accepts.
type globals struct {
	redisURL string
	prefix   string
	json     bool
}

func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.redisURL, "redis", g.redisURL, "")
	fs.StringVar(&g.prefix, "prefix", g.prefix, "")
	fs.BoolVar(&g.json, "json", g.json, "")
}

// usageError is a mistake on the command line (exit 2).
type usageError struct {
	msg string
	cmd string // the command whose help to point at, or ""
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), cmd: cmd}
}

// command is one of cronguard's commands.
type command struct {
	name    string
	args    string // "NAME" when it takes a job name
	summary string
	help    string
	// flags adds the command's flags; check validates them after parsing.
	flags func(fs *flag.FlagSet, o *options)
	check func(o *options) error
	run   func(ctx context.Context, c *session, name string) error
}

// options are the commands' own flags.
type options struct {
	note    string
	by      string
	wait    bool
	timeout time.Duration
	ttl     time.Duration
	force   bool
	limit   int             // history
	offset  int             // history
	serve   *serveConfig    // serve's own flags (serve.go)
	set     map[string]bool // the flags given
}

// run is the whole program; main only adds the signals and the exit.
func run(ctx context.Context, args []string, e env) int {
	g := globals{prefix: redislease.DefaultPrefix}
	top := flag.NewFlagSet("cronguard", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	err := top.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(e.stdout, usageText)
		return exitOK
	case err != nil:
		return fail(e, usagef("", "%v", err))
	case top.NArg() == 0:
		return fail(e, usagef("", "missing command: one of %s", commandNames()))
	}
	name, rest := top.Arg(0), top.Args()[1:]
	if name == "help" {
		return help(e, rest)
	}
	cmd := lookup(name)
	if cmd == nil {
		return fail(e, usagef("", "unknown command %q: one of %s", name, commandNames()))
	}

	o := options{set: map[string]bool{}}
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs, &o)
	}
	positional, err := parseInterspersed(fs, rest)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(e.stdout, cmd.help)
		return exitOK
	case err != nil:
		return fail(e, usagef(cmd.name, "%s: %v", cmd.name, err))
	}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	switch {
	case cmd.args == "NAME" && len(positional) == 0:
		return fail(e, usagef(cmd.name, "%s: missing the job's NAME", cmd.name))
	case cmd.args == "NAME" && len(positional) > 1:
		return fail(e, usagef(cmd.name, "%s: one job NAME expected, got %d arguments (%s)", cmd.name, len(positional), strings.Join(positional, " ")))
	case cmd.args == "" && len(positional) > 0:
		return fail(e, usagef(cmd.name, "%s: takes no argument, got %q", cmd.name, positional[0]))
	}
	if cmd.check != nil {
		if err := cmd.check(&o); err != nil {
			return fail(e, err)
		}
	}
	if o.by == "" && e.by != nil {
		o.by = e.by()
	}
	job := ""
	if len(positional) == 1 {
		job = positional[0]
	}

	s, err := connect(ctx, g, e)
	if err != nil {
		return fail(e, err)
	}
	defer s.close()
	s.opts = o
	return fail(e, cmd.run(ctx, s, job))
}

// parseInterspersed parses fs from args, allowing flags after positional
// arguments (cronguard pause report --note x); "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// fail prints err on one line to stderr and returns its exit code; nil is
// success.
func fail(e env, err error) int {
	if err == nil {
		return exitOK
	}
	code := exitFailed
	var ue *usageError
	switch {
	case errors.As(err, &ue):
		code = exitUsage
	case errors.Is(err, errRunFailed):
		code = exitRunFailed
	case errors.Is(err, inspect.ErrUnknownJob), errors.Is(err, inspect.ErrNotHeld):
		code = exitNotFound
	case errors.Is(err, inspect.ErrWaitTimeout):
		code = exitWaitTimeout
	case errors.Is(err, lease.ErrInvalidArgument):
		code = exitUsage
	}
	msg := oneLine(strings.TrimPrefix(err.Error(), "inspect: "))
	switch {
	case ue != nil && ue.cmd != "":
		msg += fmt.Sprintf(" (see cronguard %s --help)", ue.cmd)
	case ue != nil:
		msg += " (see cronguard --help)"
	case errors.Is(err, inspect.ErrUnknownJob):
		msg += " (cronguard jobs lists the fleet's jobs)"
	}
	fmt.Fprintf(e.stderr, "cronguard: %s\n", msg)
	return code
}

// errRunFailed marks a triggered run that ended without success.
var errRunFailed = errors.New("the triggered run did not succeed")

// help prints the help of a command or topic.
func help(e env, topics []string) int {
	switch {
	case len(topics) == 0:
		fmt.Fprint(e.stdout, usageText)
	case len(topics) > 1:
		return fail(e, usagef("", "help: one topic expected, got %d", len(topics)))
	case topics[0] == "json":
		fmt.Fprint(e.stdout, jsonHelp)
	case lookup(topics[0]) != nil:
		fmt.Fprint(e.stdout, lookup(topics[0]).help)
	default:
		return fail(e, usagef("", "help: unknown topic %q: one of %s, json", topics[0], commandNames()))
	}
	return exitOK
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func commandNames() string {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return strings.Join(slices.Clip(names), ", ")
}
