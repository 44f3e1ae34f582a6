package checker

import (
	"fmt"
	"time"

	"github.com/cronguard/cronguard/faults/history"
)

// Redis data loss (redis_wipe, redis_rollback).
//
// While redis-server is down, the harness empties its data (a wipe) or
// puts back a copy of its append-only file taken a few seconds before (a
// rollback), and records the instant (history.DataLost). The new server
// knows nothing the old one wrote before that instant, except, for a
// rollback, what the copy holds: every write acknowledged before the copy
// began, and none made after it ended.
//
// A lease operation (acquire, extend, release) ran on the server at some
// instant of [sent, done], in server ms. What the server knew of a lease
// at instant t is then bounded both ways:
//
//   - surely: the operations that surely ran before t and were kept by
//     every data loss since (each one that may have run before a loss was
//     surely in that loss's copy);
//   - at most: the operations that may have run before t and that no loss
//     surely discarded.
//
// The checks use the first bound to explain what data loss can explain (a
// lease or a round claim the server no longer knew), and the second to
// bound what a lease put back by a rollback can block.

// dataLoss is one recorded data loss, in server (wall) ms.
type dataLoss struct {
	kind               string // history.FaultRedisWipe or FaultRedisRollback
	at                 int64  // the data was replaced (the server was down)
	copyStart, copyEnd int64  // when the copy put back was taken (rollback only)
}

func (d *dataLoss) String() string {
	if d.kind == history.FaultRedisRollback {
		return fmt.Sprintf("the rollback at %s to the copy of %s", ms(d.at), ms(d.copyStart))
	}
	return fmt.Sprintf("the wipe at %s", ms(d.at))
}

// leaseOp is an operation on a lease that the server ran at some instant
// of [sent, done] (server ms): an acquire (sent == done == AcquiredAt), an
// extend that succeeded, or a release.
type leaseOp struct {
	sent, done int64
	expiresAt  int64 // the expiry an acquire or extend set; 0 for a release
}

// lossFrom reads a DataLost event; the copy's bounds are rounded outward.
func lossFrom(e history.Event) *dataLoss {
	return &dataLoss{kind: e.Fault, at: e.Wall / 1e6, copyStart: e.CopyStart / 1e6, copyEnd: ceilMs(e.CopyEnd)}
}

func ceilMs(ns int64) int64 { return (ns + 1e6 - 1) / 1e6 }

// surelyPresent reports whether op's effect was surely in the server's
// data at t: op surely ran before t, and every data loss before t that op
// may have preceded was a rollback to a copy that surely held it.
func (ix *indexed) surelyPresent(op leaseOp, t int64) bool {
	if op.done >= t {
		return false
	}
	for _, d := range ix.losses {
		if d.at >= t {
			break
		}
		if op.sent > d.at {
			continue // sent after the data was replaced: it ran on the new data
		}
		if d.kind != history.FaultRedisRollback || !ix.surelyPresent(op, d.copyStart) {
			return false
		}
	}
	return true
}

// mayBePresent reports whether op's effect may have been in the server's
// data at t: op may have run by t, and no data loss before t that op
// surely preceded surely discarded it.
func (ix *indexed) mayBePresent(op leaseOp, t int64) bool {
	if op.sent > t {
		return false
	}
	for _, d := range ix.losses {
		if d.at >= t {
			break
		}
		if op.done >= d.at {
			continue // it may have run on the new data
		}
		if d.kind != history.FaultRedisRollback || !ix.mayBePresent(op, d.copyEnd) {
			return false
		}
	}
	return true
}

// lossBetween returns the last data loss in (from, to), or nil.
func (ix *indexed) lossBetween(from, to int64) *dataLoss {
	var last *dataLoss
	for _, d := range ix.losses {
		if d.at > from && d.at < to {
			last = d
		}
	}
	return last
}

// lossUndoing returns the last data loss in (at, before) that may have
// discarded a write the server ran by at: a wipe, or a rollback to a copy
// that began by then (a copy taken later holds the write). nil if none.
func (ix *indexed) lossUndoing(at, before int64) *dataLoss {
	var last *dataLoss
	for _, d := range ix.losses {
		if d.at > at && d.at < before && (d.kind != history.FaultRedisRollback || d.copyStart <= at) {
			last = d
		}
	}
	return last
}

// lossOf returns the first data loss before t after which op was not
// surely in the server's data, or nil.
func (ix *indexed) lossOf(op leaseOp, t int64) *dataLoss {
	for _, d := range ix.losses {
		if d.at >= t {
			break
		}
		if d.at > op.sent && !ix.surelyPresent(op, d.at+1) {
			return d
		}
	}
	return nil
}

// serverExpiry is the latest expiry of l that the server surely knew at
// t, or 0 if it may not have known l at all (its acquire may be lost).
func (ix *indexed) serverExpiry(l *leaseRec, t int64) int64 {
	var exp int64
	for _, op := range l.ops {
		if ix.surelyPresent(op, t) {
			exp = max(exp, op.expiresAt)
		}
	}
	return exp
}

// lostWithData explains why l may have been unknown to the server at t,
// though l's holder took it for valid: a data loss after l was acquired
// and before t, after which the server surely knew no expiry of l that
// kept it live (to its tolerance) at t. It returns "" if none does.
func (ix *indexed) lostWithData(l *leaseRec, t int64) string {
	d := ix.lossBetween(l.acquiredAt, t)
	if d == nil {
		return ""
	}
	exp := ix.serverExpiry(l, t)
	switch {
	case exp == 0:
		if lost := ix.lossOf(l.ops[0], t); lost != nil {
			d = lost
		}
		return fmt.Sprintf("lease %d of %s (acquired %s) may have been lost in %s", l.fence, l.replica, ms(l.acquiredAt), d)
	case exp+Tolerance.Milliseconds() <= t:
		return fmt.Sprintf("after %s the server surely knew lease %d of %s only until %s", d, l.fence, l.replica, ms(exp))
	default:
		return ""
	}
}

// claimLost explains why the claim of l's round (and attempt) may have
// been unknown to the server when dup acquired the same occurrence (at the
// same attempt, or an earlier one): no claim of that occurrence at that
// attempt or a later one, or of a later occurrence (by any recorded lease
// of the job in leases), was surely in the server's data then. It returns
// "" if one was.
func (ix *indexed) claimLost(l, dup *leaseRec, leases []*leaseRec) string {
	d := ix.lossOf(l.ops[0], dup.acquiredAt)
	if d == nil {
		return ""
	}
	for _, c := range leases {
		later := c.occurrence > dup.occurrence || (c.occurrence == dup.occurrence && c.attempt >= dup.attempt)
		if c != dup && later && c.acquiredAt < dup.acquiredAt && ix.surelyPresent(c.ops[0], dup.acquiredAt) {
			return ""
		}
	}
	return fmt.Sprintf("lease %d of %s claimed the round at %s; %s may have lost the claim, and lease %d of %s claimed it again at %s",
		l.fence, l.replica, ms(l.acquiredAt), d, dup.fence, dup.replica, ms(dup.acquiredAt))
}

// span is an interval of server ms.
type span struct{ from, to int64 }

// blockSpans returns when l blocked acquires of its job, at most, in
// server ms: from its acquire to blocksUntil, cut at each data loss that
// followed; and after each rollback whose copy may have held l (and
// surely not its release), from the data loss to the latest expiry the
// server may have known, plus the tolerance: a lease put back. ttl is l's
// TTL.
func (ix *indexed) blockSpans(l *leaseRec, ttl time.Duration) []span {
	var out []span
	cur := span{l.acquiredAt, l.blocksUntil(ttl)}
	for _, d := range ix.losses {
		if d.at <= l.acquiredAt {
			continue
		}
		if cur.to > cur.from {
			out = append(out, span{cur.from, min(cur.to, d.at)})
		}
		cur = span{d.at, ix.restoredUntil(l, d, ttl)}
	}
	if cur.to > cur.from {
		out = append(out, cur)
	}
	return out
}

// restoredUntil is the latest l blocked acquires after the data loss d
// (server ms), or 0 if d surely left no trace of l: a wipe, a copy taken
// before l's acquire, or one that surely held its release.
func (ix *indexed) restoredUntil(l *leaseRec, d *dataLoss, ttl time.Duration) int64 {
	if d.kind != history.FaultRedisRollback || !ix.mayBePresent(l.ops[0], d.copyEnd) {
		return 0
	}
	for _, rel := range l.releases {
		if ix.surelyPresent(rel, d.copyStart) {
			return 0
		}
	}
	var exp int64
	for _, op := range l.ops {
		if ix.mayBePresent(op, d.copyEnd) || op.sent > d.at {
			exp = max(exp, op.expiresAt)
		}
	}
	if l.extendMayRunUntil != 0 {
		exp = max(exp, l.extendMayRunUntil+ttl.Milliseconds())
	}
	until := exp + Tolerance.Milliseconds()
	for _, rel := range l.releases {
		if rel.sent > d.at && rel.sent < until {
			until = rel.sent // released on the new data
		}
	}
	return until
}
