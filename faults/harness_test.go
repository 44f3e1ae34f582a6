package faults

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cronguard/cronguard/dbtest"
	"github.com/cronguard/cronguard/faults/checker"
	"github.com/cronguard/cronguard/faults/history"
	"github.com/cronguard/cronguard/lease"
	"github.com/cronguard/cronguard/lease/redislease"
	"github.com/cronguard/cronguard/scheduler"
	"github.com/cronguard/cronguard/testutil"
)

var (
	flagLong     = flag.Bool("faults.long", false, "run the long form of TestFaults (LongDuration of faults unless -faults.duration says otherwise)")
	flagDuration = flag.Duration("faults.duration", 0, "length of TestFaults' fault phase (default ShortDuration, or LongDuration with -faults.long)")
	flagSeed     = flag.Int64("faults.seed", 0, "seed of TestFaults' fault schedule and job run lengths (0: from the clock)")
	flagReplicas = flag.Int("faults.replicas", 3, "number of replica processes in TestFaults")
	flagDir      = flag.String("faults.dir", "", "keep TestFaults' histories and logs in this directory (default: a temporary one, kept only on failure)")
)

// Fault phase lengths.
const (
	ShortDuration = 35 * time.Second
	LongDuration  = 5 * time.Minute
	// settle is the fault-free time after the fault phase, before the
	// replicas are shut down.
	settle = 4 * time.Second
)

// fleet is everything TestFaults runs.
type fleet struct {
	redis    *testutil.Redis
	replicas []*replica
	hist     *history.Writer
	rng      *rand.Rand
	leases   lease.Store // direct to Redis: who holds a job's lease
	aof      *aofRing    // copies of Redis's append-only file, for redis_rollback
}

// holderBias is the probability that a fault targets a lease holder.
const holderBias = 0.7

func (f *fleet) record(t *testing.T, e history.Event) {
	t.Helper()
	require.NoError(t, f.hist.Write(e))
}

func TestFaults(t *testing.T) {
	seed := *flagSeed
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000_000
	}
	duration := ShortDuration
	if *flagLong {
		duration = LongDuration
	}
	if *flagDuration > 0 {
		duration = *flagDuration
	}
	require.GreaterOrEqual(t, *flagReplicas, 3, "-faults.replicas must be at least 3")
	t.Logf("seed %d, fault phase %s, %d replicas; reproduce: go test ./faults/ -run TestFaults -faults.seed=%d -faults.duration=%s",
		seed, duration, *flagReplicas, seed, duration)

	dir := *flagDir
	if dir == "" {
		dir = t.TempDir()
	} else {
		require.NoError(t, os.MkdirAll(dir, 0o755))
	}
	bin := buildReplica(t)
	redis := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	pg := dbtest.StartPostgres(t)
	initCmd := exec.CommandContext(t.Context(), bin, "-init", "-dsn", pg.DSN)
	out, err := initCmd.CombinedOutput()
	require.NoError(t, err, "replica -init: %s", out)

	hist, err := history.Create(filepath.Join(dir, "harness.jsonl"), "harness")
	require.NoError(t, err)
	t.Cleanup(func() { _ = hist.Close() })
	leases, err := redislease.New(redis.Client(t))
	require.NoError(t, err)
	f := &fleet{redis: redis, hist: hist, rng: rand.New(rand.NewPCG(uint64(seed), 0x5eed)), leases: leases,
		aof: newAOFRing(t, redis)}
	for i := range *flagReplicas {
		f.replicas = append(f.replicas, &replica{
			name: "r" + strconv.Itoa(i+1), bin: bin, dir: dir, dsn: pg.DSN, seed: seed,
			proxy: testutil.NewProxy(t, redis.Addr),
		})
	}
	// Registered after the proxies, so it runs before they close.
	t.Cleanup(func() {
		for _, r := range f.replicas {
			if r.cmd != nil {
				r.kill(t)
			}
		}
	})
	f.record(t, history.Event{Kind: history.HarnessStart, Seed: seed})
	dog := startWatchdog(t, hist)
	stopDog := sync.OnceValue(dog.stop)
	t.Cleanup(func() { stopDog() }) // on a failed require below
	for _, r := range f.replicas {
		r.start(t)
	}
	for _, r := range f.replicas {
		r.awaitReady(t)
	}

	injected := f.inject(t, duration)
	for _, kind := range faultKinds {
		assert.NotZero(t, injected[kind], "no %s fault injected: a fault phase of %s is too short for every kind", kind, duration)
	}
	f.sleep(t, settle) // fault-free time at the end: the schedule is time-based

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, r := range f.replicas {
		r.stop(ctx)
	}
	stalls := stopDog()
	f.record(t, history.Event{Kind: history.HarnessEnd})

	events, err := history.ReadDir(dir)
	require.NoError(t, err)
	writes, err := history.ReadWrites(t.Context(), pg.DB(t))
	require.NoError(t, err)
	require.NoError(t, history.SaveWrites(filepath.Join(dir, history.WritesFile), writes))
	rep := checker.Check(checker.Input{Events: events, Writes: writes, Jobs: CheckerJobs()})
	t.Logf("seed %d, fault phase %s, %d replicas, %d stalls\n%s", seed, duration, len(f.replicas), stalls, rep.Table())
	require.NotZero(t, rep.Runs, "no run at all")
	require.NotZero(t, rep.Occurrences, "no occurrence checked")
	// (7) checks nothing unless a job with completion ran.
	require.NotZero(t, rep.Completion.Claimed, "no occurrence of a job with completion was claimed (see the replicas' logs)")
	if len(rep.Violations) > 0 {
		if *flagDir == "" {
			keep := filepath.Join(os.TempDir(), fmt.Sprintf("cronguard-faults-%d", seed))
			_ = os.RemoveAll(keep)
			if err := os.CopyFS(keep, os.DirFS(dir)); err != nil {
				t.Errorf("could not keep the run's files in %s: %v", keep, err)
			}
			dir = keep
		}
		t.Logf("histories, accepted writes and logs kept in %s; check them again with: go run ./faults/cmd/recheck %s", dir, dir)
		t.Errorf("%d violations; reproduce the schedule with: go test ./faults/ -run TestFaults -faults.seed=%d -faults.duration=%s",
			len(rep.Violations), seed, duration)
	}
}

// faultKinds are the faults inject chooses from.
var faultKinds = []string{
	history.FaultKill, history.FaultStop, history.FaultBlackhole, history.FaultCut, history.FaultRedisRestart,
	history.FaultRedisWipe, history.FaultRedisRollback,
}

// inject runs the fault schedule for d: one fault at a time, separated by
// random gaps; every kind once (in random order) before random picks. It
// returns how many faults of each kind it injected.
func (f *fleet) inject(t *testing.T, d time.Duration) map[string]int {
	t.Helper()
	injected := map[string]int{}
	end := time.Now().Add(d)
	order := append([]string(nil), faultKinds...)
	f.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for n := 0; ; n++ {
		gap := f.between(1500*time.Millisecond, 3*time.Second)
		if time.Now().Add(gap).After(end) {
			return injected
		}
		f.sleep(t, gap) // the schedule itself is time-based
		kind := faultKinds[f.rng.IntN(len(faultKinds))]
		if n < len(order) {
			kind = order[n]
		}
		f.one(t, kind, f.target(t))
		injected[kind]++
	}
}

// one injects one fault of kind on r (or on Redis) and ends it.
func (f *fleet) one(t *testing.T, kind string, r *replica) {
	t.Helper()
	target := r.name
	var old aofCopy
	switch kind {
	case history.FaultRedisWipe, history.FaultRedisRollback:
		if kind == history.FaultRedisRollback {
			f.oldCopy(t) // the first fault may come before any copy is old enough
		}
		f.sleep(t, f.justAfterOccurrence())
		if kind == history.FaultRedisRollback {
			old = f.oldCopy(t) // copies are 2s apart: one is aged 2-6s, no wait
		}
		fallthrough
	case history.FaultRedisRestart:
		target = history.TargetRedis
	}
	hold := map[string][2]time.Duration{
		history.FaultKill:      {time.Second, 3 * time.Second},
		history.FaultStop:      {MaxTTL() + 500*time.Millisecond, MaxTTL() + 2*time.Second}, // longer than every TTL
		history.FaultBlackhole: {2 * time.Second, 4 * time.Second},
		history.FaultCut:       {time.Second, 3 * time.Second},
	}[kind]
	var wait time.Duration
	if hold[1] > 0 {
		wait = f.between(hold[0], hold[1])
	}
	f.record(t, history.Event{Kind: history.FaultStart, Fault: kind, Target: target})
	switch kind {
	case history.FaultKill:
		r.kill(t)
		f.sleep(t, wait)
		r.start(t)
		f.record(t, history.Event{Kind: history.FaultEnd, Fault: kind, Target: target})
		r.awaitReady(t)
		return
	case history.FaultStop:
		r.signal(t, syscall.SIGSTOP)
		f.sleep(t, wait)
		r.signal(t, syscall.SIGCONT)
	case history.FaultBlackhole:
		r.proxy.Blackhole()
		f.sleep(t, wait)
		r.proxy.Restore()
	case history.FaultCut:
		r.proxy.Cut()
		f.sleep(t, wait)
		r.proxy.Restore()
	case history.FaultRedisRestart:
		f.redis.Restart()
	case history.FaultRedisWipe, history.FaultRedisRollback:
		f.restartLosingData(t, kind, old)
	}
	f.record(t, history.Event{Kind: history.FaultEnd, Fault: kind, Target: target})
}

// target picks the replica a fault hits: mostly the current holder of a
// random job's lease (so that faults hit running jobs and produce stale
// holders), else a random replica.
func (f *fleet) target(t *testing.T) *replica {
	t.Helper()
	if f.rng.Float64() < holderBias {
		// The nightly job first: its attempts are what completion resumes
		// (it runs a fifth of the time). Then the stubborn job: its stale
		// writes are what fencing stops.
		for _, job := range []string{"nightly", "stubborn", Jobs[f.rng.IntN(len(Jobs))].Name} {
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			info, err := f.leases.Lookup(ctx, scheduler.JobKeyPrefix+job)
			cancel()
			if err != nil {
				continue
			}
			name, _, _ := strings.Cut(info.Owner, "/")
			for _, r := range f.replicas {
				if r.name == name {
					return r
				}
			}
		}
	}
	return f.replicas[f.rng.IntN(len(f.replicas))]
}

// justAfterOccurrence returns how long to wait until 0-4ms past the next
// whole second, an occurrence of every job: a data loss that begins then
// meets replicas still acquiring the occurrence another has just claimed,
// whose retries may claim it again from the new data.
func (f *fleet) justAfterOccurrence() time.Duration {
	now := time.Now()
	return now.Truncate(time.Second).Add(time.Second).Sub(now) + f.between(0, 4*time.Millisecond)
}

func (f *fleet) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(f.rng.Int64N(int64(hi-lo)+1))
}
