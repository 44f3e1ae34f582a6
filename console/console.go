package console

import (
	"crypto/rand"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
)

// Defaults of the options.
const (
	// DefaultRefresh is how often the fleet, jobs and job pages reload
	// themselves (with JavaScript on) unless WithRefresh says otherwise.
	DefaultRefresh = 10 * time.Second
	// DefaultTriggerWait is how long a trigger's page waits for the run's
	// end unless WithTriggerWait says otherwise.
	DefaultTriggerWait = 10 * time.Second
	// DefaultOperator is who the console says asked for an action unless
	// WithOperator names the person.
	DefaultOperator = "console"
	// MinSecretBytes is the shortest secret WithSecret accepts.
	MinSecretBytes = 32
	// MaxTriggerWait bounds WithTriggerWait.
	MaxTriggerWait = 5 * time.Minute
)

// ActionKind is one of the things the console can do to a job.
type ActionKind string

// The actions.
const (
	// ActionPause pauses a job fleet-wide, with a note (inspect.Pause).
	ActionPause ActionKind = "pause"
	// ActionResume lifts a job's pause (inspect.Resume).
	ActionResume ActionKind = "resume"
	// ActionTrigger runs a job now, once, on one replica (inspect.Trigger).
	ActionTrigger ActionKind = "trigger"
	// ActionForceRelease deletes a job's live lease (inspect.ForceRelease):
	// only safe for fenced jobs.
	ActionForceRelease ActionKind = "force_release"
)

// Action is an action a request asks for: its kind, and the job's name.
type Action struct {
	Kind ActionKind
	Job  string
}

// Console is the web console: an http.Handler. It is safe for concurrent
// use, holds no connection of its own (it reads through its Inspector) and
// starts no goroutine.
type Console struct {
	in          *inspect.Inspector
	authorize   func(*http.Request, Action) bool
	operator    func(*http.Request) string
	log         *slog.Logger
	base        string
	refresh     time.Duration
	triggerWait time.Duration
	tokens      *tokens
	origins     *http.CrossOriginProtection
	mux         *http.ServeMux
	pages       *pages
	now         func() time.Time // the local clock, for the ages of replicas' times
}

var _ http.Handler = (*Console)(nil)

// Option configures a Console. Options validate their input; New returns
// the first error.
type Option func(*config) error

type config struct {
	authorize   func(*http.Request, Action) bool
	operator    func(*http.Request) string
	log         *slog.Logger
	base        string
	refresh     time.Duration
	triggerWait time.Duration
	secret      []byte
	origins     []string
}

// WithAuthorizer makes the console able to act: fn is asked, on every
// action request, whether the request may take the action, and the action
// is refused with 403 Forbidden unless it says yes. It is also asked, on
// a job page's request, which action forms to show. fn must be safe for
// concurrent use and quick; it sees the request as the console received
// it (after the host's middleware). Default: nil, a read-only console that
// refuses every action and shows no form.
func WithAuthorizer(fn func(r *http.Request, a Action) bool) Option {
	return func(c *config) error {
		if fn == nil {
			return invalid("WithAuthorizer", "authorizer must not be nil (leave the option out for a read-only console)")
		}
		c.authorize = fn
		return nil
	}
}

// WithOperator sets how the console names who asked for an action, as
// inspect records it with pauses and triggers and logs it with every
// action: fn returns the person's name (for example the user the host's
// authentication found). The name must pass lease.ValidateOwner (valid
// UTF-8, at most lease.MaxOwnerLen bytes, no control characters); an
// action whose name fails it answers 500 and changes nothing. Default:
// DefaultOperator ("console") for every request.
func WithOperator(fn func(r *http.Request) string) Option {
	return func(c *config) error {
		if fn == nil {
			return invalid("WithOperator", "operator func must not be nil")
		}
		c.operator = fn
		return nil
	}
}

// WithLogger sets the logger of refused actions and store errors. Actions
// done are logged by the Inspector (inspect.WithLogger). Default:
// slog.Default().
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalid("WithLogger", "logger must not be nil")
		}
		c.log = l
		return nil
	}
}

// WithBasePath mounts the console under a path: p starts with "/" and has
// no trailing "/" (for example "/cron"). The console then serves p + "/"
// and the paths under it, and its links and forms point under p; mount it
// with mux.Handle(p+"/", c) and without http.StripPrefix. Default: "" (the
// console is the whole site's root).
func WithBasePath(p string) Option {
	return func(c *config) error {
		if p == "" {
			c.base = ""
			return nil
		}
		if !strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.ContainsAny(p, "?#%\"'<> \\") || strings.Contains(p, "//") {
			return invalid("WithBasePath", "path must start with / and not end with /, without spaces, quotes, ?, # or %%, got %q", p)
		}
		c.base = p
		return nil
	}
}

// WithRefresh sets how often the fleet, jobs and job pages reload
// themselves when JavaScript is on (never while the reader types in a
// form): a whole number of seconds from 1s to 1h, or 0 to turn it off.
// Default: DefaultRefresh (10s).
func WithRefresh(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > time.Hour || d%time.Second != 0 || (d > 0 && d < time.Second) {
			return invalid("WithRefresh", "refresh must be 0 or a whole number of seconds from 1s to 1h, got %s", d)
		}
		c.refresh = d
		return nil
	}
}

// WithTriggerWait sets how long a trigger's page waits for the triggered
// run to end (inspect.WithWait) before it answers that the run is queued
// or in progress: from 0 (do not wait) to MaxTriggerWait. Default:
// DefaultTriggerWait (10s).
func WithTriggerWait(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 || d > MaxTriggerWait {
			return invalid("WithTriggerWait", "wait must be from 0 to %s, got %s", MaxTriggerWait, d)
		}
		c.triggerWait = d
		return nil
	}
}

// WithSecret sets the key of the forms' tokens, at least MinSecretBytes
// random bytes. Consoles that serve one site behind a load balancer need
// the same secret, so that a form one of them served is accepted by the
// others. Default: MinSecretBytes random bytes drawn by New (a restart
// makes the open pages' forms stale: they answer 403 until reloaded).
func WithSecret(secret []byte) Option {
	return func(c *config) error {
		if len(secret) < MinSecretBytes {
			return invalid("WithSecret", "secret must be at least %d bytes, got %d", MinSecretBytes, len(secret))
		}
		c.secret = append([]byte(nil), secret...)
		return nil
	}
}

// WithTrustedOrigin accepts actions from pages of another origin
// (scheme://host[:port]), as http.CrossOriginProtection.AddTrustedOrigin
// does: for a console reached under a name its Host header does not
// carry (some reverse proxies). Default: none; only same-origin requests
// act.
func WithTrustedOrigin(origin string) Option {
	return func(c *config) error {
		if err := http.NewCrossOriginProtection().AddTrustedOrigin(origin); err != nil {
			return invalid("WithTrustedOrigin", "%v", err)
		}
		c.origins = append(c.origins, origin)
		return nil
	}
}

// New returns a console of the fleet in reads and steers. It does no I/O.
func New(in *inspect.Inspector, opts ...Option) (*Console, error) {
	if in == nil {
		return nil, invalid("New", "inspector must not be nil")
	}
	c := config{log: slog.Default(), refresh: DefaultRefresh, triggerWait: DefaultTriggerWait}
	for _, opt := range opts {
		if opt == nil {
			return nil, invalid("New", "option must not be nil")
		}
		if err := opt(&c); err != nil {
			return nil, err
		}
	}
	if c.secret == nil {
		c.secret = make([]byte, MinSecretBytes)
		rand.Read(c.secret) // never fails (crypto/rand)
	}
	origins := http.NewCrossOriginProtection()
	for _, o := range c.origins {
		if err := origins.AddTrustedOrigin(o); err != nil {
			return nil, invalid("WithTrustedOrigin", "%v", err)
		}
	}
	ps, err := parsePages()
	if err != nil {
		return nil, err
	}
	con := &Console{
		in: in, authorize: c.authorize, operator: c.operator, log: c.log, base: c.base,
		refresh: c.refresh, triggerWait: c.triggerWait, tokens: newTokens(c.secret, c.base),
		origins: origins, pages: ps, now: time.Now,
	}
	if con.operator == nil {
		con.operator = func(*http.Request) string { return DefaultOperator }
	}
	con.routes()
	return con, nil
}

// routes builds the console's paths, under its base path.
func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", c.serveFleet)
	m.HandleFunc("GET /jobs", c.serveJobs)
	m.HandleFunc("GET /jobs/{name}", c.serveJob)
	m.HandleFunc("GET /jobs/{name}/release", c.serveReleaseConfirm)
	m.HandleFunc("POST /jobs/{name}/pause", c.action(ActionPause, c.doPause))
	m.HandleFunc("POST /jobs/{name}/resume", c.action(ActionResume, c.doResume))
	m.HandleFunc("POST /jobs/{name}/trigger", c.action(ActionTrigger, c.doTrigger))
	m.HandleFunc("POST /jobs/{name}/release", c.action(ActionForceRelease, c.doRelease))
	m.Handle("GET /static/", staticHandler())
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.fail(w, r, http.StatusNotFound, "There is no page at this address.", nil)
	})
	c.mux = m
}

// ServeHTTP serves the console's pages, assets and actions, with the
// security headers on every response.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if c.base != "" {
		path := r.URL.Path
		switch {
		case path == c.base:
			http.Redirect(w, r, c.base+"/", http.StatusMovedPermanently)
			return
		case !strings.HasPrefix(path, c.base+"/"):
			c.fail(w, r, http.StatusNotFound, "There is no page at this address.", nil)
			return
		}
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.Path = strings.TrimPrefix(path, c.base)
		u.RawPath = strings.TrimPrefix(r.URL.RawPath, c.base)
		r2.URL = &u
		r = r2
	}
	c.mux.ServeHTTP(w, r)
}

// by returns who asks for an action, or false when the host's operator
// func named no valid holder label.
func (c *Console) by(r *http.Request) (string, bool) {
	by := c.operator(r)
	if by == "" || lease.ValidateOwner(by) != nil {
		return "", false
	}
	return by, true
}

// allowed reports whether r may take the action.
func (c *Console) allowed(r *http.Request, a Action) bool {
	return c.authorize != nil && c.authorize(r, a)
}
