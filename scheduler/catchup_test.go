package scheduler

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A deploy restarts every replica across 02:00: all three are stopped from
// 01:55 to 02:10 and restarted at the same instant. With WithCatchUp(1h)
// the nightly 02:00 occurrence runs exactly once after the restart, late,
// as a catch-up. Without it, it runs nowhere, and the next night's winner
// reports it missed.
func TestScheduler_CatchUp_DeployAcrossTheNightlyOccurrence(t *testing.T) {
	for _, catchUp := range []bool{true, false} {
		t.Run(fmt.Sprintf("catch-up %t", catchUp), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				mem := newMemoryStore(t, nil) // two days of rueidis timers would cost seconds of CPU
				day := time.Now()             // 2000-01-01 00:00 UTC
				at := func(d int, hhmm time.Duration) time.Time { return day.Add(time.Duration(d)*24*time.Hour + hhmm) }
				occ := newOccurrences()
				var ev events
				var opts []JobOption
				if catchUp {
					opts = append(opts, WithCatchUp(time.Hour))
				}
				generation := func() []*Scheduler {
					var replicas []*Scheduler
					for i := range 3 {
						s := newScheduler(t, mem, WithInstanceID(fmt.Sprintf("replica-%d", i)), WithObserver(ev.observe))
						require.NoError(t, s.Register("nightly", Cron("0 2 * * *"), occ.record, opts...))
						replicas = append(replicas, s)
					}
					for _, s := range replicas {
						require.NoError(t, s.Start())
					}
					return replicas
				}
				stop := func(replicas []*Scheduler) {
					for _, s := range replicas {
						shutdown(t, s)
					}
				}

				// The replicas run only around 02:00 each night: three of
				// them ticking for two whole days made this the race
				// detector's heaviest bubble by far.
				time.Sleep(time.Hour)
				first := generation() // 01:00 to 03:00 on day 0
				time.Sleep(time.Until(at(0, 3*time.Hour)))
				synctest.Wait()
				stop(first)
				time.Sleep(time.Until(at(1, time.Hour)))
				old := generation() // from 01:00 on day 1
				time.Sleep(time.Until(at(1, time.Hour+55*time.Minute)))
				stop(old) // 01:55 on day 1
				time.Sleep(15 * time.Minute)
				synctest.Wait()
				restarted := generation() // 02:10 on day 1, all at once
				time.Sleep(time.Until(at(1, 3*time.Hour)))
				synctest.Wait()
				stop(restarted)
				time.Sleep(time.Until(at(2, time.Hour)))
				last := generation() // 01:00 to 03:00 on day 2
				time.Sleep(time.Until(at(2, 3*time.Hour)))
				synctest.Wait()
				stop(last)

				runs := occ.sorted("nightly")
				missed := ev.of(EventMissed)
				if catchUp {
					assert.Equal(t, []int64{at(0, 2*time.Hour).UnixMilli(), at(1, 2*time.Hour).UnixMilli(), at(2, 2*time.Hour).UnixMilli()}, runs,
						"02:00 on day 1 ran once, after the restart")
					assert.Empty(t, missed)
					var catchUps []Event
					for _, e := range ev.of(EventStarted) {
						if e.CatchUp {
							catchUps = append(catchUps, e)
						}
					}
					require.Len(t, catchUps, 1)
					assert.Equal(t, at(1, 2*time.Hour).UnixMilli(), catchUps[0].Occurrence.UnixMilli())
					assert.Equal(t, 10*time.Minute, catchUps[0].Lateness, "it ran at the restart, 10 minutes late")
					return
				}
				assert.Equal(t, []int64{at(0, 2*time.Hour).UnixMilli(), at(2, 2*time.Hour).UnixMilli()}, runs, "02:00 on day 1 ran nowhere")
				require.Len(t, missed, 1, "the next night's winner reports it")
				assert.Equal(t, Missed{Count: 1, First: at(1, 2*time.Hour).UTC(), Last: at(1, 2*time.Hour).UTC()}, missed[0].Missed)
			})
		})
	}
}

// With WithCatchUp, a run that outlived later occurrences is followed by
// one catch-up run of the latest of them, within the window; the others
// are reported missed by it.
func TestScheduler_CatchUp_AfterALongRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := time.Now()
		first := make(chan struct{}, 1)
		first <- struct{}{}
		f := newReplicaSet(t, 2, nil, func(s *Scheduler, occ *occurrences) {
			require.NoError(t, s.Register("long", Every(10*time.Second), func(ctx context.Context) error {
				_ = occ.record(ctx)
				select {
				case <-first:
					time.Sleep(35 * time.Second) // 0.5s to 35.5s: 10s, 20s and 30s find it locked
				default:
				}
				return nil
			}, WithTTL(3*time.Second), WithCatchUp(30*time.Second)))
		})
		time.Sleep(500 * time.Millisecond)
		f.start(t)
		time.Sleep(55 * time.Second)
		synctest.Wait()
		f.shutdown(t)

		sec := func(s int) int64 { return base.Add(time.Duration(s) * time.Second).UnixMilli() }
		// 0s is caught up at Start (0.5s) and runs long; after it, 30s is
		// caught up at 35.5s; 10s and 20s ran nowhere.
		assert.Equal(t, []int64{sec(0), sec(30), sec(40), sec(50)}, f.occ.sorted("long"))
		missed := f.all(EventMissed)
		require.Len(t, missed, 1)
		assert.Equal(t, Missed{Count: 2, First: time.UnixMilli(sec(10)).UTC(), Last: time.UnixMilli(sec(20)).UTC()}, missed[0].Missed)
		assert.Equal(t, sec(30), missed[0].Occurrence.UnixMilli(), "reported by the catch-up's win")
		var catchUps int
		for _, s := range f.replicas {
			catchUps += int(s.Stats().CatchUps)
		}
		assert.Equal(t, 2, catchUps, "0s at Start and 30s after the long run")
	})
}
