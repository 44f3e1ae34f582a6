package luascripts

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/cronguard/cronguard/lease"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAll_Scripts_HaveHeaderAndTolerance(t *testing.T) {
	want := fmt.Sprintf("local TOLERANCE_MS = %d\n", ToleranceMs)
	for name, src := range All() {
		t.Run(name, func(t *testing.T) {
			require.NotEmpty(t, src)
			assert.True(t, strings.HasPrefix(src, "-- "), "script must open with a header comment")
			assert.Contains(t, src, "KEYS[1]")
			assert.Contains(t, src, "Returns")
			if strings.Contains(src, "TOLERANCE_MS") {
				assert.Contains(t, src, want, "a script that judges liveness must use the one tolerance")
			}
			assert.NotContains(t, src, "cjson.decode", "hot paths must not decode JSON in Lua")
			assert.NotContains(t, src, "'EXPIRE'", "scripts must not expire keys outside their records")
			assert.NotContains(t, src, "tonumber(ARGV", "the client's numbers are read by arithmetic (doc.go)")
			assert.NotContains(t, src, "math.floor(t[2]", "TIME's ms are taken without math.floor (doc.go)")
		})
	}
}

func TestToleranceMs_MatchesLease(t *testing.T) {
	assert.Equal(t, lease.ExpiryTolerance, time.Duration(ToleranceMs)*time.Millisecond)
}

func TestAll_Scripts_NeverTouchFenceOrRoundExceptAcquire(t *testing.T) {
	for name, src := range All() {
		switch name {
		case "acquire.lua", "rollback.lua", "acquire_trigger.lua", "acquire_queued.lua", "queue_leave.lua", "release_status.lua", "registry_publish.lua", "registry_refresh.lua", "acquire_resume.lua", "give_up.lua":
			continue // their KEYS[3] and KEYS[4] are not the fence and round keys, or are written as documented
		}
		assert.NotContains(t, src, "KEYS[3]", name)
		assert.NotContains(t, src, "KEYS[4]", name)
	}
}

// TestKeyedScripts_TouchOnlyDeclaredKeys: the keyed scripts pass every key
// they touch through KEYS (DESIGN 4), unlike the ID scripts, which must
// find the data key through the index.
func TestKeyedScripts_TouchOnlyDeclaredKeys(t *testing.T) {
	call := regexp.MustCompile(`redis\.call\('([A-Z]+)'(?:, ([^,)]+))?`)
	for name, src := range map[string]string{"extend_lease.lua": ExtendLease, "release_lease.lua": ReleaseLease, "rollback.lua": Rollback} {
		t.Run(name, func(t *testing.T) {
			calls := call.FindAllStringSubmatch(src, -1)
			require.NotEmpty(t, calls)
			for _, c := range calls {
				if c[1] == "TIME" {
					continue
				}
				assert.Regexp(t, `^KEYS\[\d\]$`, c[2], "%s must name a declared key", c[0])
			}
		})
	}
}

// TestRollback_NeverDeletesTheRoundOrTouchesTheFence: the roll-back sets
// the round record back, never deletes it, and leaves the fence counter.
func TestRollback_NeverDeletesTheRoundOrTouchesTheFence(t *testing.T) {
	assert.NotContains(t, Rollback, ":fence:{", "the fence counter is not among its keys")
	assert.NotContains(t, Rollback, "'INCR'")
	assert.Regexp(t, `redis\.call\('DEL', KEYS\[1\], KEYS\[2\]\)`, Rollback, "it deletes only the record and the index")
	assert.NotRegexp(t, `'DEL'[^)]*KEYS\[3\]`, Rollback)
}
