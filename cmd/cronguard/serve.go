package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/cronguard/cronguard/console"
	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
)

// Defaults of serve's flags.
const (
	defaultServeAddr = "127.0.0.1:8080"
	// shutdownTimeout bounds how long serve waits, at its end, for the
	// requests in progress (a trigger's page waits up to --trigger-wait).
	shutdownTimeout = 10 * time.Second
)

// The actions --actions can name, and "all".
var serveActions = map[string]console.ActionKind{
	"pause":   console.ActionPause,
	"resume":  console.ActionResume,
	"trigger": console.ActionTrigger,
	"release": console.ActionForceRelease,
}

// serveConfig is serve's own flags.
type serveConfig struct {
	addr, actions, authFile, basePath string
	tlsCert, tlsKey                   string
	refresh, triggerWait              time.Duration

	allowed map[console.ActionKind]bool // from actions, by serveCheck
	users   map[string][32]byte         // from authFile: SHA-256 of each user's password
}

func serveFlags(fs *flag.FlagSet, o *options) {
	sc := &serveConfig{addr: defaultServeAddr, refresh: console.DefaultRefresh, triggerWait: console.DefaultTriggerWait}
	fs.StringVar(&sc.addr, "addr", sc.addr, "")
	fs.StringVar(&sc.actions, "actions", "", "")
	fs.StringVar(&sc.authFile, "auth-file", "", "")
	fs.StringVar(&sc.basePath, "base-path", "", "")
	fs.StringVar(&sc.tlsCert, "tls-cert", "", "")
	fs.StringVar(&sc.tlsKey, "tls-key", "", "")
	fs.DurationVar(&sc.refresh, "refresh", sc.refresh, "")
	fs.DurationVar(&sc.triggerWait, "trigger-wait", sc.triggerWait, "")
	o.serve = sc
}

// serveCheck validates serve's flags and reads the auth file.
func serveCheck(o *options) error {
	sc := o.serve
	if _, _, err := net.SplitHostPort(sc.addr); err != nil {
		return usagef("serve", "serve: --addr %q: want host:port (e.g. 127.0.0.1:8080)", sc.addr)
	}
	if (sc.tlsCert == "") != (sc.tlsKey == "") {
		return usagef("serve", "serve: --tls-cert and --tls-key go together")
	}
	sc.allowed = map[console.ActionKind]bool{}
	if sc.actions != "" {
		for name := range strings.SplitSeq(sc.actions, ",") {
			name = strings.TrimSpace(name)
			if name == "all" {
				for _, k := range serveActions {
					sc.allowed[k] = true
				}
				continue
			}
			k, ok := serveActions[name]
			if !ok {
				return usagef("serve", "serve: --actions %q: want all, or a comma-separated list of pause, resume, trigger, release", sc.actions)
			}
			sc.allowed[k] = true
		}
		if sc.authFile == "" {
			return usagef("serve", "serve: --actions needs --auth-file: the console acts only for people who sign in, and records who did what")
		}
	}
	if sc.authFile != "" {
		users, err := readAuthFile(sc.authFile)
		if err != nil {
			return usagef("serve", "serve: --auth-file %s: %v", sc.authFile, err)
		}
		sc.users = users
	}
	// The console's options check the rest (base path, refresh, wait); New
	// does nothing with the Inspector but keep it.
	if _, err := console.New(&inspect.Inspector{}, sc.consoleOptions(nil)...); err != nil {
		return usagef("serve", "serve: %s", strings.TrimPrefix(err.Error(), "console: invalid option: "))
	}
	return nil
}

// readAuthFile reads the users who may sign in: "user:password" lines;
// empty lines and lines starting with # are skipped. The file must not be
// readable by group or others. Only the passwords' SHA-256 are kept.
func readAuthFile(path string) (map[string][32]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, errors.Unwrap(err) // the path is in the message already
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("readable by group or others (mode %#o): chmod 600 it", fi.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, errors.Unwrap(err)
	}
	defer f.Close()
	users := map[string][32]byte{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		switch {
		case !ok || user == "" || pass == "":
			return nil, fmt.Errorf("line %d: want user:password", n) // never print the line: it holds a password
		case lease.ValidateOwner(user) != nil || strings.ContainsAny(user, " \t"):
			return nil, fmt.Errorf("line %d: the user name must be printable UTF-8 without spaces, at most %d bytes", n, lease.MaxOwnerLen)
		}
		if _, dup := users[user]; dup {
			return nil, fmt.Errorf("line %d: user %q listed twice", n, user)
		}
		users[user] = sha256.Sum256([]byte(pass))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, errors.New("no user:password line")
	}
	return users, nil
}

// consoleOptions are the console's options for this config; in is the
// Inspector's logger.
func (sc *serveConfig) consoleOptions(log *slog.Logger) []console.Option {
	opts := []console.Option{console.WithRefresh(sc.refresh), console.WithTriggerWait(sc.triggerWait), console.WithBasePath(sc.basePath)}
	if log != nil {
		opts = append(opts, console.WithLogger(log))
	}
	if len(sc.allowed) > 0 {
		allowed := sc.allowed
		opts = append(opts,
			console.WithAuthorizer(func(r *http.Request, a console.Action) bool {
				_, signedIn := signedInUser(r)
				return signedIn && allowed[a.Kind]
			}),
			console.WithOperator(func(r *http.Request) string {
				user, _ := signedInUser(r)
				return user
			}))
	}
	return opts
}

type userKey struct{}

// signedInUser returns the user the basic auth middleware let in.
func signedInUser(r *http.Request) (string, bool) {
	u, ok := r.Context().Value(userKey{}).(string)
	return u, ok
}

// requireSignIn lets in only requests with the basic auth credentials of
// a user of the auth file, and records who.
func requireSignIn(users map[string][32]byte, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		if ok {
			want, known := users[user]
			got := sha256.Sum256([]byte(pass))
			if subtle.ConstantTimeCompare(got[:], want[:]) == 1 && known {
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="cronguard console", charset="UTF-8"`)
		http.Error(w, "sign in to see the cronguard console", http.StatusUnauthorized)
	})
}

// runServe serves the console until ctx ends (Ctrl-C, SIGTERM).
func runServe(ctx context.Context, s *session, _ string) error {
	sc := s.opts.serve
	log := slog.New(slog.NewTextHandler(s.env.stderr, nil))
	store, err := redislease.New(s.client, redislease.WithPrefix(s.prefix))
	if err != nil {
		return err
	}
	// The Inspector logs every action with who asked.
	in, err := inspect.New(store, inspect.WithLogger(log))
	if err != nil {
		return err
	}
	rctx, cancel := s.opContext(ctx, 0)
	_, err = in.Replicas(rctx) // fail now, not at the first page, if Redis cannot be read
	cancel()
	unreadable, _, err := incompleteRead(err)
	if err != nil {
		return fmt.Errorf("cannot read the fleet on %s: %w", s.server, err)
	}
	if unreadable != nil {
		// The pages show the rest of the fleet, and name these.
		log.Warn("registry entries the console cannot read are left out of its pages", slog.Any("replicas", unreadable.Replicas), slog.Any("error", unreadable))
	}
	c, err := console.New(in, sc.consoleOptions(log)...)
	if err != nil {
		return usagef("serve", "serve: %s", err)
	}
	var h http.Handler = c
	if sc.users != nil {
		h = requireSignIn(sc.users, c)
	}

	ln, err := net.Listen("tcp", sc.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	tls := sc.tlsCert != ""
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      sc.triggerWait + 30*time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	scheme := "http"
	if tls {
		scheme = "https"
	}
	mode := "read-only"
	if len(sc.allowed) > 0 {
		var names []string
		for name, k := range serveActions {
			if sc.allowed[k] {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		mode = "actions " + strings.Join(names, ", ") + " for signed-in users"
	} else if sc.users != nil {
		mode = "read-only, for signed-in users"
	}
	fmt.Fprintf(s.env.stdout, "cronguard console on %s://%s%s/ (%s), fleet %q on %s\n", scheme, ln.Addr(), sc.basePath, mode, s.prefix, s.server)
	if warn := exposure(ln.Addr(), tls, sc.users != nil); warn != "" {
		log.Warn(warn)
	}

	served := make(chan error, 1)
	go func() {
		if tls {
			served <- srv.ServeTLS(ln, sc.tlsCert, sc.tlsKey)
		} else {
			served <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = srv.Shutdown(sctx)
	<-served // http.ErrServerClosed
	if err != nil {
		return fmt.Errorf("serve: stopping: %w", err)
	}
	return nil
}

// exposure warns of a console reachable beyond this machine without TLS
// or without sign-in.
func exposure(addr net.Addr, tls, signIn bool) string {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || ta.IP.IsLoopback() {
		return ""
	}
	switch {
	case signIn && !tls:
		return "the console listens beyond loopback over plain HTTP: sign-in passwords cross the network in clear; use --tls-cert and --tls-key, or a TLS proxy"
	case !signIn:
		return "the console listens beyond loopback without --auth-file: whoever reaches it sees the fleet's jobs, pause notes and errors"
	}
	return ""
}

const serveHelp = `Usage: cronguard serve [--addr HOST:PORT] [--auth-file FILE [--actions LIST]]
                      [--base-path P] [--refresh D] [--trigger-wait D]
                      [--tls-cert FILE --tls-key FILE]

Serves the web console: the fleet (replicas, versions, conflicts), its jobs
(state, where each runs, last run, next occurrences in the job's zone,
pauses and their notes) and each job's run history, read from Redis at
every page (never from a replica). Stop it with Ctrl-C or SIGTERM.

It is read-only unless --actions is given, and --actions needs --auth-file:
the console then asks for a user name and password (HTTP basic auth) on
every page, lets signed-in users take the listed actions, and records
their user name with each pause, trigger and force-release. Forms are
protected against cross-site requests (docs/console.md).

Flags:
  --addr HOST:PORT   where to listen (default 127.0.0.1:8080; port 0 picks a
                     free port). The address is printed on stdout.
  --auth-file FILE   users who may sign in: one user:password per line
                     (# comments). It must not be readable by group or
                     others (chmod 600). With it every page needs a sign-in.
  --actions LIST     the actions signed-in users may take: all, or a comma-
                     separated list of pause, resume, trigger, release
                     (default: none, read-only). Needs --auth-file.
  --base-path P      serve under the path P (e.g. /cron) behind a proxy that
                     keeps the path (default: the root)
  --refresh D        how often pages reload with JavaScript on, whole seconds
                     (default 10s; 0 turns it off)
  --trigger-wait D   how long a trigger's page waits for the run's end
                     (default 10s; 0: do not wait)
  --tls-cert FILE, --tls-key FILE
                     serve HTTPS. Without them, a console beyond loopback
                     with --auth-file sends passwords in clear: use them or
                     a TLS proxy.

Give the console the Redis user it needs: the read-only user of
docs/redis-acl.md when read-only, the operator's user with --actions.

Exit codes: 0 when stopped by a signal; 1 if Redis cannot be read at the
start or the address cannot be listened on; 2 for a usage error.
`
