package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/inspect"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease/redislease"
)

// Connection timeouts: how long to wait for Redis to accept a connection
// and to answer on it.
const (
	dialTimeout = 5 * time.Second
	ioTimeout   = 10 * time.Second
)

// session is one command's connection to the fleet.
type session struct {
	env    env
	json   bool
	prefix string
	server string // the Redis URL without its password, for messages
	client rueidis.Client
	in     *inspect.Inspector
	opts   options
}

// redisURL returns the URL to use: --redis, else $CRONGUARD_REDIS_URL,
// else the default.
func redisURL(g globals, e env) string {
	if g.redisURL != "" {
		return g.redisURL
	}
	if e.getenv != nil {
		if u := e.getenv(envRedisURL); u != "" {
			return u
		}
	}
	return defaultRedisURL
}

// clientOptions parses a Redis URL. Its errors never contain the URL's
// password.
func clientOptions(raw string) (rueidis.ClientOption, string, error) {
	const want = "want redis://[user:password@]host:port[/db], or rediss://... for TLS"
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's message quotes the whole URL, password included.
		return rueidis.ClientOption{}, "", usagef("", "--redis: not a valid URL (%s)", want)
	}
	display := u.Redacted()
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return rueidis.ClientOption{}, "", usagef("", "--redis %s: scheme must be redis or rediss, got %q (%s)", display, u.Scheme, want)
	}
	if u.Host == "" {
		return rueidis.ClientOption{}, "", usagef("", "--redis %s: no host (%s)", display, want)
	}
	opt, err := rueidis.ParseURL(raw)
	if err != nil {
		// rueidis's messages name the scheme, path or parameter at fault,
		// never the user information.
		return rueidis.ClientOption{}, "", usagef("", "--redis %s: %s (%s)", display, strings.TrimPrefix(err.Error(), "redis: "), want)
	}
	opt.DisableCache = true // no CLIENT TRACKING: the commands read each value once
	opt.Dialer.Timeout = dialTimeout
	opt.ConnWriteTimeout = ioTimeout
	return opt, display, nil
}

// connect checks the global flags, connects to Redis and builds the
// Inspector.
func connect(ctx context.Context, g globals, e env) (*session, error) {
	prefix, err := leasekit.NormalizePrefix(g.prefix)
	if err != nil {
		return nil, usagef("", "--prefix %q: %s", g.prefix, strings.TrimPrefix(err.Error(), "lease: invalid argument: "))
	}
	opt, display, err := clientOptions(redisURL(g, e))
	if err != nil {
		return nil, err
	}
	opt.ClientName = "cronguard-cli"
	if ctx.Err() != nil {
		return nil, context.Cause(ctx)
	}
	client, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("cannot connect to Redis at %s: %w", display, err)
	}
	store, err := redislease.New(client, redislease.WithPrefix(prefix))
	if err != nil {
		client.Close()
		return nil, err
	}
	// Commands that change the fleet say so on stdout; the log of who did
	// what is the replicas' and the store's.
	in, err := inspect.New(store, inspect.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	if err != nil {
		client.Close()
		return nil, err
	}
	return &session{env: e, json: g.json, prefix: prefix, server: display, client: client, in: in}, nil
}

func (s *session) close() { s.client.Close() }

// opContext bounds one command's work with Redis, plus extra.
func (s *session) opContext(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, opTimeout+extra)
}
