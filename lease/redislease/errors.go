package redislease

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/rueidis"

	"github.com/cronguard/cronguard/lease"
)

// This package defines no sentinels of its own: every error it returns
// wraps one of lease's (lease.ErrLocked, lease.ErrUnavailable, ...) and,
// where there is one, the underlying cause, so both errors.Is(err,
// lease.ErrX) and errors.As(err, *rueidis.RedisError) work.

// redisErrorKinds maps the first word of a Redis error reply to the lease
// sentinel it means. Anything else (ERR, WRONGTYPE, ...) is ErrInternal.
var redisErrorKinds = map[string]error{
	"NOAUTH":      lease.ErrAuth,
	"WRONGPASS":   lease.ErrAuth,
	"NOPERM":      lease.ErrAuth,
	"BUSY":        lease.ErrUnavailable,
	"LOADING":     lease.ErrUnavailable,
	"READONLY":    lease.ErrUnavailable,
	"MASTERDOWN":  lease.ErrUnavailable,
	"CLUSTERDOWN": lease.ErrUnavailable,
	"TRYAGAIN":    lease.ErrUnavailable,
}

// classify returns the lease sentinel for an error from the Redis client.
// The context's own state is checked first: a deadline that passed also
// shows up as a net timeout, and a canceled context as a closed connection.
func classify(ctx context.Context, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.Canceled), errors.Is(err, context.Canceled):
		return lease.ErrAborted
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return lease.ErrTimeout
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) && !re.IsNil() {
		msg := re.Error()
		word, _, _ := strings.Cut(msg, " ")
		if kind, ok := redisErrorKinds[word]; ok {
			return kind
		}
		if isScriptACLDenial(msg) {
			return lease.ErrAuth
		}
		return lease.ErrInternal
	}
	var ne net.Error
	switch {
	case errors.Is(err, errReplicaAck): // wait.go
		return lease.ErrUnavailable
	case errors.As(err, new(*tls.CertificateVerificationError)):
		return lease.ErrAuth // the client does not trust the server's TLS certificate
	case errors.Is(err, rueidis.ErrClosing), errors.Is(err, rueidis.ErrNoSlot), errors.Is(err, rueidis.ErrNoAddr):
		return lease.ErrUnavailable
	case errors.As(err, &ne) && ne.Timeout():
		return lease.ErrTimeout
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return lease.ErrUnavailable
	case errors.As(err, &ne):
		return lease.ErrUnavailable
	}
	return lease.ErrInternal
}

// Error is the error of every Store method and option: the operation, what
// it was about, and why. Err wraps one of package lease's errors
// (lease.ErrLocked, lease.ErrNotHeld, lease.ErrUnavailable, ...), so that
// errors.Is, errors.As and lease.Class see through it. Its text reads
// "redislease: <op> <subject>: <cause>".
type Error struct {
	// Op is the Store method ("acquire", "extend", "release", "lookup",
	// ...) or the option ("WithPrefix", ...) that failed.
	Op string
	// Subject says what the operation was about without revealing it: a
	// lease's short ID ("lease …x9Qk2w") or a key's hash prefix
	// ("key#3fA9b1c0"). Empty when the operation has none.
	Subject string
	// Err is the cause.
	Err error
}

// Error returns "redislease: <op> <subject>: <cause>".
func (e *Error) Error() string {
	if e.Subject == "" {
		return "redislease: " + e.Op + ": " + e.Err.Error()
	}
	return "redislease: " + e.Op + " " + e.Subject + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// opErr is the Store's error for op about what (may be empty).
func opErr(op, what string, err error) error {
	return &Error{Op: op, Subject: what, Err: err}
}

// wrapErr names the operation and wraps both the lease sentinel for err and
// err itself. what identifies the subject without revealing it (a short ID
// or key hash) and may be empty.
func wrapErr(ctx context.Context, op, what string, err error) error {
	return opErr(op, what, fmt.Errorf("%w: %w", classify(ctx, err), err))
}

// internalErr is an ErrInternal error for an unexpected reply or record.
// err already wraps lease.ErrInternal or describes the problem.
func internalErr(op, what string, err error) error {
	if errors.Is(err, lease.ErrInternal) {
		return opErr(op, what, err)
	}
	return opErr(op, what, fmt.Errorf("%w: %w", lease.ErrInternal, err))
}

// outcomeUnknown reports whether a command that failed with err may still
// have run on the server: the caller's context ended (the request may have
// been sent), or the connection broke or timed out after the request may
// have been written (EOF, a reset, a closed connection, a network timeout,
// the client closing). A reply from the server (an error reply such as
// BUSY or NOPERM) says the command did not run, and a connection that
// could not be made (refused, no address, no slot, DNS, an untrusted
// certificate) never carried it.
func outcomeUnknown(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var re *rueidis.RedisError
	if errors.As(err, &re) {
		return false
	}
	var op *net.OpError
	switch {
	case errors.Is(err, rueidis.ErrNoAddr), errors.Is(err, rueidis.ErrNoSlot), errors.Is(err, syscall.ECONNREFUSED):
		return false
	case errors.As(err, &op) && op.Op == "dial":
		return false
	case errors.As(err, new(*net.DNSError)), errors.As(err, new(*tls.CertificateVerificationError)):
		return false
	}
	return true
}

// errUnreadable is the cause for the scripts' -9 code.
var errUnreadable = errors.New("unreadable lease record or index at the lease's keys")

// errBadReply is the cause for a reply of an unexpected shape.
var errBadReply = errors.New("unexpected reply from script")

// isScriptACLDenial reports whether a Redis error reply says that a command
// called inside a script was refused by the ACL. Redis sends these as ERR,
// not NOPERM: "ERR The user executing the script can't run this command or
// subcommand ..." (7.0) and "ERR ACL failure in script: ..." (7.2 and
// later, which also names the command).
func isScriptACLDenial(msg string) bool {
	return strings.Contains(msg, "The user executing the script can't") || strings.Contains(msg, "ACL failure in script")
}
