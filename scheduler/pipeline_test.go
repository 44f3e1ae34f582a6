package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fireAt(ms int64) firing { return firing{occ: time.UnixMilli(ms)} }

// gocron can fire one scheduled time twice; the second firing is dropped
// before it reaches the store, as is an older one.
func TestPipeline_Offer_DropsRepeats(t *testing.T) {
	var p pipeline
	res, _, _ := p.offer(fireAt(1000))
	require.Equal(t, offerQueue, res)
	_, ok := p.done()
	require.False(t, ok)
	for _, ms := range []int64{1000, 999} {
		res, _, _ = p.offer(fireAt(ms))
		assert.Equal(t, offerDuplicate, res, "occurrence %d after 1000", ms)
	}
	res, _, _ = p.offer(fireAt(2000))
	assert.Equal(t, offerQueue, res)
}

// While a firing is being acquired, the next one waits; a third replaces
// the waiting one, which is returned to be skipped as an overrun; done
// hands over the waiting firing, then the job goes idle.
func TestPipeline_Offer_OneBusyOneWaiting(t *testing.T) {
	var p pipeline
	res, _, _ := p.offer(fireAt(1000))
	require.Equal(t, offerQueue, res)
	res, _, ok := p.offer(fireAt(2000))
	require.Equal(t, offerWait, res)
	require.False(t, ok, "nothing was waiting")
	res, sup, ok := p.offer(fireAt(3000))
	require.Equal(t, offerWait, res)
	require.True(t, ok)
	assert.Equal(t, int64(2000), sup.occ.UnixMilli(), "2000 is superseded")
	assert.True(t, p.acquiring())

	next, ok := p.done()
	require.True(t, ok)
	assert.Equal(t, int64(3000), next.occ.UnixMilli())
	assert.True(t, p.acquiring(), "3000 is now the busy firing")
	_, ok = p.done()
	assert.False(t, ok)
	assert.False(t, p.acquiring())
}

// A catch-up is no duplicate of a gocron firing, whatever its occurrence,
// and is dropped while the job is busy with another firing.
func TestPipeline_Offer_CatchUp(t *testing.T) {
	var p pipeline
	res, _, _ := p.offer(fireAt(5000))
	require.Equal(t, offerQueue, res)
	res, _, _ = p.offer(firing{occ: time.UnixMilli(4000), catchUp: true})
	assert.Equal(t, offerLate, res, "the job is busy with 5000")
	_, _ = p.done()
	res, _, _ = p.offer(firing{occ: time.UnixMilli(4000), catchUp: true})
	assert.Equal(t, offerQueue, res, "idle: an older occurrence may be caught up")
	res, _, _ = p.offer(fireAt(5000))
	assert.Equal(t, offerDuplicate, res, "the catch-up did not reset the gocron dedup")
}
