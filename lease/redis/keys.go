package redis

import (
	"strings"

	"github.com/cronguard/cronguard/lease"
)

// keyset is the set of Redis keys of one lease key. All of them share one
// hash tag's slot, so a script can touch them together on Redis Cluster.
type keyset struct {
	storage string // storage key K (lease.StorageKey), hashed into KeyHash
	tag     string // hash tag G: K, or lease.Hash(K) when K contains a brace
	slot    int    // hash slot of G
	data    string // <prefix>:{G}
	fence   string // <prefix>:fence:{G}
	round   string // <prefix>:round:{G}
}

// keysFor derives the keyset of a normalized user key under prefix.
func keysFor(prefix, key string) (keyset, error) {
	k, err := lease.StorageKey(prefix, key, lease.StorageKeyBudget, lease.StorageKeyReserve)
	if err != nil {
		return keyset{}, err
	}
	g := k
	if strings.ContainsAny(k, "{}") {
		g = lease.Hash(k)
	}
	return keyset{
		storage: k,
		tag:     g,
		slot:    keySlot(g),
		data:    prefix + ":{" + g + "}",
		fence:   prefix + ":fence:{" + g + "}",
		round:   prefix + ":round:{" + g + "}",
	}, nil
}

// indexPrefix returns <prefix>:id:{T}: for a slot; the ID follows it.
func indexPrefix(prefix string, slot int) string {
	return prefix + ":id:{" + slotTag(slot) + "}:"
}

// indexKey returns the ID index key of id, and false when the ID's leading
// characters encode no slot (such an ID was not issued by this store).
func indexKey(prefix, id string) (string, bool) {
	s, ok := decodeSlot(id)
	if !ok {
		return "", false
	}
	return indexPrefix(prefix, s) + id, true
}

// newID returns a fresh lease ID that routes to slot: three characters
// encoding the slot, then 19 random base64url characters (114 bits) from
// lease.NewID.
func newID(slot int) string {
	return encodeSlot(slot) + lease.NewID()[:lease.IDLen-3]
}
