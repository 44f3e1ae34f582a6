package fleettest

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/fleet"
)

// Env is one isolated store under test.
type Env struct {
	// Store is the store under test, holding nothing the suite did not
	// create (a fresh store, or a unique key prefix per Env).
	Store fleet.Store
	// Wait lets d pass on the store's clock.
	Wait func(d time.Duration)
}

// Run runs the suite. newEnv is called once per subtest, possibly from
// several goroutines at once, and must return an isolated Env.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, env Env)
	}{
		{"Pause/RefusesAndRecordsTheRound", testPause},
		{"Pause/TellsTheRoundBefore", testPauseTellsTheRoundBefore},
		{"Pause/OnlyWithPauseCheck", testPauseOnlyWithCheck},
		{"Pause/Validation", testPauseValidation},
		{"Pause/FastClockRecordsNothing", testPauseFastClock},
		{"Trigger/ConsumedOnceUnderTheLease", testTrigger},
		{"Trigger/WaitsWhileLocked", testTriggerLocked},
		{"Trigger/Expires", testTriggerExpires},
		{"Trigger/QueueOutlivesAShortTrigger", testTriggerQueueOutlivesAShortTrigger},
		{"Trigger/Validation", testTriggerValidation},
		{"Trigger/OccurrenceFollowsEveryClaim", testTriggerOccurrenceFollowsEveryClaim},
		{"Trigger/WaitsWhilePaused", testTriggerWaitsWhilePaused},
		{"Trigger/LiveBehindManyExpired", testTriggerLiveBehindManyExpired},
		{"Trigger/CountedInOneBatch", testTriggerBatch},
		{"Status/RecordedByTheHolder", testStatus},
		{"Status/NotByALostLease", testStatusLost},
		{"Status/ReleaseBatchAnswersAsOneByOne", testReleaseBatch},
		{"History/NewestFirstAndPaging", testHistoryNewestFirst},
		{"History/Capped", testHistoryCapped},
		{"History/SurvivesRelease", testHistorySurvivesRelease},
		{"History/NotByALostLease", testHistoryNotByALostLease},
		{"History/UnknownJob", testHistoryUnknownJob},
		{"History/Validation", testHistoryValidation},
		{"Registry/PublishRefreshDrop", testRegistry},
		{"Registry/Conflicts", testConflicts},
		{"Registry/EntriesLapse", testRegistryLapse},
		{"Channel/PublishSubscribe", testChannel},
		{"JobState/OneRead", testJobState},
		{"ForceRelease/FreesTheKey", testForceRelease},
		{"Completion/OpenThenDone", testCompletionOpenThenDone},
		{"Completion/Backoff", testCompletionBackoff},
		{"Completion/ReleaseGivenUp", testCompletionReleaseGivenUp},
		{"Completion/GiveUpOnce", testCompletionGiveUp},
		{"Completion/Index", testCompletionIndex},
		{"Completion/ResumePaused", testCompletionResumePaused},
		{"Completion/CloseValidation", testCompletionCloseValidation},
		{"Completion/DeadHolder", testCompletionDeadHolder},
		{"Completion/SupersededByTrigger", testCompletionSupersededByTrigger},
		{"Completion/SupersededWhilePaused", testCompletionSupersededWhilePaused},
	}
	var wg sync.WaitGroup
	for _, tt := range tests {
		wg.Go(func() {
			t.Run(tt.name, func(t *testing.T) {
				env := newEnv(t)
				require.NotNil(t, env.Store)
				require.NotNil(t, env.Wait)
				tt.fn(t, env)
			})
		})
	}
	wg.Wait()
}
