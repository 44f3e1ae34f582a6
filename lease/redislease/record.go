package redislease

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/cronguard/cronguard/fencing"
	"github.com/cronguard/cronguard/internal/leasekit"
	"github.com/cronguard/cronguard/lease"
)

// Fence thresholds. Fences are stored as 15 decimal digits and follow the
// server clock's floor (lease.FenceFloor: Unix ms * 100), so they reach
// fenceMax in the year 2255, and fenceWarn in 2239: a fence past fenceMax
// is refused, one past fenceWarn is logged so that operators act long
// before. A fence that runs further ahead of its clock floor than
// fenceAhead is logged too: a counter lost with the data would then resume
// below it (more than 100 acquires per millisecond on one key, for a
// minute, or a server clock that went back).
const (
	fenceMax   = 900_000_000_000_000
	fenceWarn  = 850_000_000_000_000
	fenceAhead = 60_000 * lease.FencesPerMillisecond
)

// record is the lease data stored at the data key, as JSON:
//
//	{"lockId":"<id>","expiresAtMs": <13>,"acquiredAtMs": <13>,"fence":"<15 digits>","round":<n>,"prev":<n>,"key":"...","owner":"..."}
//
// The scripts build the first six fields (they need server time, the fence
// counter and the round record) with the ID and expiry at fixed offsets,
// and the client builds the tail (writeRecordTail). round is the round the
// acquire claimed and prev the one recorded before it (0: none); records
// written before they existed lack them. Pointers tell a missing field from
// a zero one.
type record struct {
	LockID       *string `json:"lockId"`
	ExpiresAtMs  *int64  `json:"expiresAtMs"`
	AcquiredAtMs *int64  `json:"acquiredAtMs"`
	Fence        *string `json:"fence"`
	Round        int64   `json:"round"`
	Prev         int64   `json:"prev"`
	Key          *string `json:"key"`
	Owner        *string `json:"owner"`
}

// writeRecordTail writes the end of a record: the key field, the owner
// field (ownerJSON is already a JSON string) and the closing brace.
func writeRecordTail(b *strings.Builder, key, ownerJSON string) {
	b.WriteString(`"key":`)
	writeJSONString(b, key)
	b.WriteString(`,"owner":`)
	b.WriteString(ownerJSON)
	b.WriteByte('}')
}

// ownerJSONOf is an owner label as the record stores it: the empty label
// (no lease.WithOwner) stores no label, "", without building it.
func ownerJSONOf(owner string) string {
	if owner == "" {
		return `""`
	}
	return jsonString(owner)
}

// jsonString returns s as a JSON string, as encoding/json writes it.
func jsonString(s string) string {
	var b strings.Builder
	writeJSONString(&b, s)
	return b.String()
}

// writeJSONString writes s as a JSON string, byte for byte as
// encoding/json.Marshal writes it: printable ASCII other than the quote,
// the backslash and the HTML characters <, > and & is written as is, and
// any other string goes through encoding/json.
func writeJSONString(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s) // strings always marshal
			b.Write(j)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// The record head of a lease, around its ID: the first 49 bytes of its
// record, up to the expiry, {"lockId":"<id>","expiresAtMs":. The keyed
// scripts compare it with the stored record, which checks the layout and the
// ID in one comparison (heldKeys builds it).
const (
	recordHeadOpen  = `{"lockId":"`
	recordHeadClose = `","expiresAtMs":`
)

// parsedRecord is a record that passed every check.
type parsedRecord struct {
	id                    string
	key, owner            string
	fence                 fencing.Token
	round, prev           int64
	acquiredAt, expiresAt time.Time
}

// parseRecord decodes and checks a stored record. Every failure wraps
// lease.ErrInternal and names what was wrong, never the record's content.
func parseRecord(raw string) (parsedRecord, error) {
	var r record
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		return parsedRecord{}, fmt.Errorf("%w: lease record is not JSON (%d bytes)", lease.ErrInternal, len(raw))
	}
	var missing string
	switch {
	case r.LockID == nil:
		missing = "lockId"
	case r.ExpiresAtMs == nil:
		missing = "expiresAtMs"
	case r.AcquiredAtMs == nil:
		missing = "acquiredAtMs"
	case r.Fence == nil:
		missing = "fence"
	case r.Key == nil:
		missing = "key"
	}
	if missing != "" {
		return parsedRecord{}, fmt.Errorf("%w: lease record has no %s field", lease.ErrInternal, missing)
	}
	if err := leasekit.ValidateID(*r.LockID); err != nil {
		return parsedRecord{}, fmt.Errorf("%w: lease record has a malformed lockId", lease.ErrInternal)
	}
	f, err := parseFence(*r.Fence)
	if err != nil {
		return parsedRecord{}, err
	}
	p := parsedRecord{
		id:         *r.LockID,
		key:        *r.Key,
		fence:      f,
		round:      r.Round,
		prev:       r.Prev,
		acquiredAt: time.UnixMilli(*r.AcquiredAtMs),
		expiresAt:  time.UnixMilli(*r.ExpiresAtMs),
	}
	if r.Owner != nil {
		p.owner = *r.Owner
	}
	return p, nil
}

// parseFence parses a stored fence: exactly 15 decimal digits, positive,
// at most fenceMax. Failures wrap lease.ErrInternal.
func parseFence(s string) (fencing.Token, error) {
	if len(s) != 15 {
		return 0, fmt.Errorf("%w: lease record fence must be 15 digits, got %d characters", lease.ErrInternal, len(s))
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("%w: lease record fence must be decimal digits", lease.ErrInternal)
		}
		n = n*10 + uint64(c-'0')
	}
	return checkFence(int64(n))
}

// checkFence checks a fence counter value from the server: positive and at
// most fenceMax (the counter is past its safe range: ErrInternal).
func checkFence(n int64) (fencing.Token, error) {
	switch {
	case n <= 0:
		return 0, fmt.Errorf("%w: fence must be positive, got %d", lease.ErrInternal, n)
	case n > fenceMax:
		return 0, fmt.Errorf("%w: fence counter overflow: %d is past %d", lease.ErrInternal, n, int64(fenceMax))
	}
	return fencing.Token(n), nil
}

// info turns a parsed record into the Info that Lookup returns.
func (p parsedRecord) info(storageKey string) lease.Info {
	return lease.Info{
		KeyHash:    leasekit.Hash(storageKey),
		IDHash:     leasekit.Hash(p.id),
		Fence:      p.fence,
		Owner:      p.owner,
		AcquiredAt: p.acquiredAt,
		ExpiresAt:  p.expiresAt,
	}
}
