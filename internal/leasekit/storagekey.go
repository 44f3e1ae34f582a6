package leasekit

import "strings"

// Storage-key budget defaults (see StorageKey).
const (
	KeyBudget  = 1000 // bytes a storage key may take in all
	KeyReserve = 26   // bytes kept free for namespaces and hash tags
)

// StorageKey derives the storage key K of a normalized user key under
// prefix: the key itself when the Redis keys built from it fit, that is
// len(prefix) + len(key) + reserve <= budget (trailing colons of prefix
// not counted), else Hash(key) (22 characters). The prefix is not part of
// K: the Redis keys are "<prefix>:{K}", "<prefix>:fence:{K}", ... It fails
// with ErrInvalidArgument when even the hashed form does not fit.
func StorageKey(prefix, key string, budget, reserve int) (string, error) {
	p := strings.TrimRight(prefix, ":")
	if len(p)+len(key)+reserve <= budget {
		return key, nil
	}
	if len(p)+IDLen+reserve > budget {
		return "", invalid("storage key does not fit in %d bytes even hashed (prefix is %d bytes, reserve %d)", budget, len(p), reserve)
	}
	return Hash(key), nil
}
