package redislease

import (
	"crypto/rand"
	"encoding/base64"
	"strings"

	"github.com/cronguard/cronguard/internal/leasekit"
)

// keyset is the set of Redis keys of one lease key. All of them share one
// hash tag's slot, so a script can touch them together on Redis Cluster.
type keyset struct {
	storage string // storage key K (leasekit.StorageKey), hashed into KeyHash
	tag     string // hash tag G: K, or leasekit.Hash(K) when K contains a brace
	slot    int    // hash slot of G
	data    string // <prefix>:{G}
	fence   string // <prefix>:fence:{G}
	round   string // <prefix>:round:{G}
}

// keysFor derives the keyset of a normalized user key under prefix. The
// data, fence and round keys share one allocation: they run on every
// acquire.
func keysFor(prefix, key string) (keyset, error) {
	k, g, err := tagOf(prefix, key)
	if err != nil {
		return keyset{}, err
	}
	var b strings.Builder
	b.Grow(3*(len(prefix)+len(g)) + len(":{}:fence:{}:round:{}"))
	writeTagged(&b, prefix, ":{", g)
	d := b.Len()
	writeTagged(&b, prefix, ":fence:{", g)
	f := b.Len()
	writeTagged(&b, prefix, ":round:{", g)
	all := b.String()
	return keyset{
		storage: k,
		tag:     g,
		slot:    keySlot(g),
		data:    all[:d],
		fence:   all[d:f],
		round:   all[f:],
	}, nil
}

// tagOf returns the storage key K of a normalized user key under prefix
// (leasekit.StorageKey) and its hash tag G: K, or leasekit.Hash(K) when K
// contains a brace, which would split the tag.
func tagOf(prefix, key string) (k, g string, err error) {
	k, err = leasekit.StorageKey(prefix, key, leasekit.KeyBudget, leasekit.KeyReserve)
	if err != nil {
		return "", "", err
	}
	if strings.ContainsAny(k, "{}") {
		return k, leasekit.Hash(k), nil
	}
	return k, k, nil
}

// writeTagged writes prefix, namespace (ending in "{"), tag and "}".
func writeTagged(b *strings.Builder, prefix, namespace, tag string) {
	b.WriteString(prefix)
	b.WriteString(namespace)
	b.WriteString(tag)
	b.WriteByte('}')
}

// writeIndexPrefix writes <prefix>:id:{T}: for a slot; the ID follows it.
func writeIndexPrefix(b *strings.Builder, prefix string, slot int) {
	writeTagged(b, prefix, ":id:{", slotTag(slot))
	b.WriteByte(':')
}

// indexKeyLen is the length of an ID index key for a slot.
func indexKeyLen(prefix string, slot int) int {
	return len(prefix) + len(":id:{}:") + len(slotTag(slot)) + leasekit.IDLen
}

// heldKeys derives, for the lease with id on the normalized user key, the
// data key, the ID index key and the record head (recordHead) in one
// allocation, for the keyed fast path (held.go). It reports false when the
// ID path must answer instead: the ID is malformed or routes to no slot, or
// the key is invalid or hashes to another slot than the ID (the keys could
// not be used together on Redis Cluster, and cannot be the same lease's).
func heldKeys(prefix, key, id string) (data, index, head string, ok bool) {
	slot, ok := decodeSlot(id)
	if !ok || leasekit.ValidateID(id) != nil {
		return "", "", "", false
	}
	_, g, err := tagOf(prefix, key)
	if err != nil || keySlot(g) != slot {
		return "", "", "", false
	}
	var b strings.Builder
	b.Grow(len(prefix) + len(g) + len(":{}") + indexKeyLen(prefix, slot) + len(recordHeadOpen) + leasekit.IDLen + len(recordHeadClose))
	writeTagged(&b, prefix, ":{", g)
	d := b.Len()
	writeIndexPrefix(&b, prefix, slot)
	b.WriteString(id)
	i := b.Len()
	b.WriteString(recordHeadOpen)
	b.WriteString(id)
	b.WriteString(recordHeadClose)
	all := b.String()
	return all[:d], all[d:i], all[i:], true
}

// indexKey returns the ID index key of id, and false when the ID's leading
// characters encode no slot (such an ID was not issued by this store).
func indexKey(prefix, id string) (string, bool) {
	slot, ok := decodeSlot(id)
	if !ok {
		return "", false
	}
	var b strings.Builder
	b.Grow(indexKeyLen(prefix, slot))
	writeIndexPrefix(&b, prefix, slot)
	b.WriteString(id)
	return b.String(), true
}

// newID returns a fresh lease ID that routes to slot: three characters
// encoding the slot, then 19 random base64url characters (114 bits).
func newID(slot int) string {
	var buf [leasekit.IDLen]byte
	return string(appendNewID(buf[:0], slot))
}

// newLeaseID returns a fresh lease ID that routes to slot and its ID index
// key, in one allocation (the ID is the index key's tail).
func newLeaseID(prefix string, slot int) (id, index string) {
	var b strings.Builder
	b.Grow(indexKeyLen(prefix, slot))
	writeIndexPrefix(&b, prefix, slot)
	var buf [leasekit.IDLen]byte
	b.Write(appendNewID(buf[:0], slot))
	index = b.String()
	return index[len(index)-leasekit.IDLen:], index
}

// appendNewID appends a fresh lease ID that routes to slot to dst.
func appendNewID(dst []byte, slot int) []byte {
	var raw [16]byte
	_, _ = rand.Read(raw[:]) // never fails (crypto/rand, Go 1.24+)
	var enc [leasekit.IDLen]byte
	base64.RawURLEncoding.Encode(enc[:], raw[:])
	return append(appendSlot(dst, slot), enc[:leasekit.IDLen-3]...)
}
