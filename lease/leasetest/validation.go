package leasetest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

var validationTests = []subtest{
	{"InvalidKeys", testInvalidKeys},
	{"KeyLengthBoundary", testKeyLength},
	{"NFCEquivalentKeys", testNFCKeys},
	{"UnusualKeys", testUnusualKeys},
	{"InvalidIDs", testInvalidIDs},
	{"InvalidTTLs", testInvalidTTLs},
	{"MaxTTL", testMaxTTL},
	{"InvalidOwner", testInvalidOwner},
}

func testInvalidKeys(t *testing.T, env Env) {
	ctx := t.Context()
	for name, key := range map[string]string{
		"empty":        "",
		"513 bytes":    strings.Repeat("k", lease.MaxKeyBytes+1),
		"invalid UTF8": "job-\xff\xfe",
	} {
		_, err := env.Store.Acquire(ctx, key, longTTL)
		requireInvalid(t, err, "Acquire with key "+name)
		_, err = env.Store.IsLocked(ctx, key)
		requireInvalid(t, err, "IsLocked with key "+name)
		_, err = env.Store.Lookup(ctx, key)
		requireInvalid(t, err, "Lookup with key "+name)
	}
}

func testKeyLength(t *testing.T, env Env) {
	ctx := t.Context()
	prefix := testKey(t, "")
	exact := prefix + strings.Repeat("k", lease.MaxKeyBytes-len(prefix))
	require.Len(t, exact, lease.MaxKeyBytes)
	l := acquire(t, env, exact, longTTL)
	assert.Equal(t, exact, l.Key)
	require.NoError(t, env.Store.Release(ctx, l.ID))

	// 513 bytes as given, 512 after NFC ("e" + combining acute -> "é").
	composes := prefix + strings.Repeat("k", lease.MaxKeyBytes-len(prefix)-2) + "e\u0301"
	require.Len(t, composes, lease.MaxKeyBytes+1)
	l = acquire(t, env, composes, longTTL)
	assert.Len(t, l.Key, lease.MaxKeyBytes, "the limit applies after NFC normalization")

	// Two 512-byte keys that differ only at the end are different leases.
	other := exact[:len(exact)-1] + "x"
	l2 := acquire(t, env, other, longTTL)
	require.NotEqual(t, l.ID, l2.ID)
}

func testNFCKeys(t *testing.T, env Env) {
	ctx := t.Context()
	composed := testKey(t, "caf\u00e9")
	decomposed := testKey(t, "cafe\u0301")
	l := acquire(t, env, composed, longTTL)
	assert.Equal(t, composed, l.Key)
	_, err := env.Store.Acquire(ctx, decomposed, longTTL)
	requireLocked(t, err, "Acquire of the decomposed form of a held key")
	requireLockedState(t, env, decomposed, true, "canonically equivalent keys name one lease")
	info, err := env.Store.Lookup(ctx, decomposed)
	require.NoError(t, err)
	assert.Equal(t, l.Fence, info.Fence)

	l2 := acquire(t, env, testKey(t, "naïve-decomposed-first-i\u0308"), longTTL)
	assert.Equal(t, testKey(t, "naïve-decomposed-first-\u00ef"), l2.Key, "Lease.Key is NFC")
}

// testUnusualKeys: keys with separators, braces and emoji are ordinary keys,
// and none of them collide with another.
func testUnusualKeys(t *testing.T, env Env) {
	ctx := t.Context()
	base := testKey(t, "")
	keys := []string{
		"a", "a:b", "a:b:c", "a/b", "/", ":", "::", "{a}", "{a}:b", "a{b}", "{", "}", "}{", "{}",
		"fence", "fence:a", "round:a", "id:a", "🔒 job", "job ", " job", "\t", "ключ", "名前", "a*b?[c]",
		"cronguard:a", "%s%d", "\\", "\"quoted\"",
	}
	leases := make([]*lease.Lease, 0, 2*len(keys))
	hashes := map[string]string{}
	for _, k := range keys {
		for _, key := range []string{k, base + k} {
			l, err := env.Store.Acquire(ctx, key, longTTL)
			require.NoError(t, err, "Acquire(%q): every distinct key is its own lease", key)
			require.Equal(t, key, l.Key)
			requireLockedState(t, env, key, true, "after acquire")
			info, err := env.Store.Lookup(ctx, key)
			require.NoError(t, err, "Lookup(%q)", key)
			require.Equal(t, l.Fence, info.Fence, "Lookup(%q) fence", key)
			if prev, dup := hashes[info.KeyHash]; dup {
				t.Fatalf("keys %q and %q have the same KeyHash", prev, key)
			}
			hashes[info.KeyHash] = key
			leases = append(leases, l)
		}
	}
	for _, l := range leases {
		require.NoError(t, env.Store.Release(ctx, l.ID), "Release of key %q", l.Key)
		requireLockedState(t, env, l.Key, false, "after release")
	}
}

func testInvalidIDs(t *testing.T, env Env) {
	ctx := t.Context()
	valid := leasekit.NewID()
	for name, id := range map[string]string{
		"empty":     "",
		"short":     valid[:21],
		"long":      valid + "A",
		"plus":      valid[:21] + "+",
		"slash":     valid[:21] + "/",
		"padding":   valid[:20] + "==",
		"space":     valid[:21] + " ",
		"non-ASCII": valid[:20] + "é",
		"NUL":       valid[:21] + "\x00",
	} {
		_, err := env.Store.Extend(ctx, id, longTTL)
		requireInvalid(t, err, "Extend with ID "+name)
		err = env.Store.Release(ctx, id)
		requireInvalid(t, err, "Release with ID "+name)
		_, err = env.Store.LookupID(ctx, id)
		requireInvalid(t, err, "LookupID with ID "+name)
	}
}

func testInvalidTTLs(t *testing.T, env Env) {
	ctx := t.Context()
	key := testKey(t, "k")
	l := acquire(t, env, key, longTTL)
	require.NoError(t, env.Store.Release(ctx, l.ID))
	held := acquire(t, env, testKey(t, "held"), longTTL)
	for _, ttl := range []time.Duration{0, -time.Second, time.Microsecond, 500 * time.Microsecond,
		1500 * time.Microsecond, lease.MaxTTL + time.Millisecond} {
		_, err := env.Store.Acquire(ctx, key, ttl)
		requireInvalid(t, err, "Acquire with TTL "+ttl.String())
		_, err = env.Store.Extend(ctx, held.ID, ttl)
		requireInvalid(t, err, "Extend with TTL "+ttl.String())
	}
	requireLockedState(t, env, key, false, "invalid acquires must not take the lease")
	requireUntouched(t, env, held, "invalid extends must not change the lease")
}

func testMaxTTL(t *testing.T, env Env) {
	l := acquire(t, env, testKey(t, "k"), lease.MaxTTL)
	assert.Equal(t, lease.MaxTTL, l.ExpiresAt.Sub(l.AcquiredAt))
	_, err := env.Store.Extend(t.Context(), l.ID, lease.MaxTTL)
	require.NoError(t, err, "Extend with MaxTTL")
	require.NoError(t, env.Store.Release(t.Context(), l.ID))
	l = acquire(t, env, testKey(t, "ms"), time.Millisecond)
	assert.Equal(t, time.Millisecond, l.ExpiresAt.Sub(l.AcquiredAt), "1ms is the smallest TTL")
}

func testInvalidOwner(t *testing.T, env Env) {
	key := testKey(t, "k")
	for name, owner := range map[string]string{
		"over MaxOwnerLen":    strings.Repeat("o", lease.MaxOwnerLen+1),
		"invalid UTF-8":       "bad\xffowner",
		"tab":                 "host\tjob",
		"newline":             "host\njob",
		"NUL":                 "host\x00job",
		"DEL":                 "host\x7fjob",
		"C1 control (U+0085)": "host\u0085job",
	} {
		_, err := env.Store.Acquire(t.Context(), key, longTTL, lease.WithOwner(owner))
		requireInvalid(t, err, "Acquire with an owner label: "+name)
		assert.Contains(t, err.Error(), "owner", "the error names the owner rule (%s)", name)
	}
	requireLockedState(t, env, key, false, "an invalid acquire must not take the lease")
	l := acquire(t, env, key, longTTL, lease.WithOwner(strings.Repeat("o", lease.MaxOwnerLen)))
	assert.Len(t, l.Owner, lease.MaxOwnerLen)
	require.NoError(t, env.Store.Release(t.Context(), l.ID))

	// Any printable Unicode is kept byte for byte, by every store.
	const unicodeOwner = "wörker-ß/日本/🙂 \"quoted\" <&>"
	l = acquire(t, env, key, longTTL, lease.WithOwner(unicodeOwner))
	assert.Equal(t, unicodeOwner, l.Owner)
	info, err := env.Store.Lookup(t.Context(), key)
	require.NoError(t, err)
	assert.Equal(t, unicodeOwner, info.Owner, "Lookup returns the owner label as given")
}
