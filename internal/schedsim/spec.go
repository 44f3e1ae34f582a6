package schedsim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/cronguard/cronguard/fleet"
	"github.com/cronguard/cronguard/scheduler"
)

// JobSpec is one job of a simulation, as every replica registers it.
type JobSpec struct {
	Name     string
	Schedule string // as scheduler.Schedule.String would say it, roughly
	Spec     string // the schedule as fleet.Next reads it
	Gap      time.Duration

	every time.Duration
	cron  string
	at    time.Time

	TTL       time.Duration
	Timeout   time.Duration // 0: none
	CatchUp   time.Duration // 0: none
	BufferOne bool
	Limit     string // the concurrency limit's name; "" for none
	LimitN    int

	// Completion policy: Attempts in total (0: the scheduler's default,
	// 1: completion off), failures retried (Retry, waiting RetryAfter
	// between attempts), and the attempt window (0: until the next
	// occurrence).
	Attempts   int
	Retry      bool
	RetryAfter time.Duration
	Window     time.Duration

	// Mix weighs the behaviours of its runs: ok, long, fail, panic,
	// goexit, stubborn (ignores its context).
	Mix [numBehaviours]int
}

// The behaviours of a run.
const (
	behaveOK = iota
	behaveLong
	behaveFail
	behavePanic
	behaveGoexit
	behaveStubborn
	numBehaviours
)

var behaviourNames = [numBehaviours]string{"ok", "long", "fail", "panic", "goexit", "stubborn"}

// schedule returns the job's scheduler.Schedule.
func (j *JobSpec) schedule() scheduler.Schedule {
	switch {
	case j.every > 0:
		return scheduler.Every(j.every)
	case j.cron != "":
		return scheduler.Cron(j.cron)
	}
	return scheduler.At(j.at)
}

// options returns the job's options, with the concurrency limit's n.
func (j *JobSpec) options(limitN int) []scheduler.JobOption {
	opts := []scheduler.JobOption{scheduler.WithTTL(j.TTL)}
	if j.Timeout > 0 {
		opts = append(opts, scheduler.WithTimeout(j.Timeout))
	}
	if j.CatchUp > 0 {
		opts = append(opts, scheduler.WithCatchUp(j.CatchUp))
	}
	if j.BufferOne {
		opts = append(opts, scheduler.WithOverlap(scheduler.OverlapBufferOne))
	}
	if j.Limit != "" {
		opts = append(opts, scheduler.WithConcurrencyLimit(j.Limit, limitN))
	}
	switch {
	case j.Retry:
		opts = append(opts, scheduler.WithRetry(j.Attempts, backoff.NewConstantBackOff(j.RetryAfter)))
	case j.Attempts > 0:
		opts = append(opts, scheduler.WithAttempts(j.Attempts))
	}
	if j.Window > 0 {
		opts = append(opts, scheduler.WithAttemptWindow(j.Window))
	}
	return opts
}

// occurrences returns the job's occurrences in [from, to).
func (j *JobSpec) occurrences(from, to time.Time) []time.Time {
	var out []time.Time
	t := from.Add(-time.Nanosecond)
	for {
		next, err := fleet.Next(j.Spec, t)
		if err != nil || next.IsZero() || !next.Before(to) {
			return out
		}
		out = append(out, next)
		t = next
	}
}

// prev returns the job's last occurrence at or before t.
func (j *JobSpec) prev(t time.Time) (time.Time, bool) {
	occ := j.occurrences(t.Add(-j.Gap-time.Second), t.Add(time.Nanosecond))
	if len(occ) == 0 {
		return time.Time{}, false
	}
	return occ[len(occ)-1], true
}

// next returns the job's first occurrence strictly after t; zero if none.
func (j *JobSpec) next(t time.Time) time.Time {
	n, _ := fleet.Next(j.Spec, t)
	return n
}

// genJob draws job i of a simulation starting at start; full allows
// schedules as frequent as every 5 seconds, else every 15.
func genJob(rng *rand.Rand, i int, start time.Time, full bool) JobSpec {
	j := JobSpec{Name: fmt.Sprintf("job%d", i)}
	switch k := rng.IntN(20); {
	case k < 12:
		gaps := []time.Duration{15 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute}
		if full {
			gaps = []time.Duration{5 * time.Second, 10 * time.Second, 15 * time.Second, 20 * time.Second,
				30 * time.Second, time.Minute, 2 * time.Minute}
		}
		j.every = gaps[rng.IntN(len(gaps))]
		j.Gap = j.every
		j.Schedule = "every " + j.every.String()
		j.Spec = "every:" + strconv.FormatInt(int64(j.every), 10) + "+0"
	case k < 18:
		crons := []struct {
			expr string
			gap  time.Duration
		}{{"*/10 * * * * *", 10 * time.Second}, {"*/30 * * * * *", 30 * time.Second},
			{"* * * * *", time.Minute}, {"*/2 * * * *", 2 * time.Minute}, {"*/5 * * * *", 5 * time.Minute}}
		if !full {
			crons = crons[1:]
		}
		c := crons[rng.IntN(len(crons))]
		j.cron, j.Gap = c.expr, c.gap
		j.Schedule = "cron " + c.expr
		j.Spec = "cron:UTC:" + c.expr
	default:
		j.at = start.Add(time.Duration(2+rng.IntN(50))*time.Minute + time.Duration(rng.IntN(1000))*time.Millisecond).Truncate(time.Millisecond)
		j.Gap = 30 * time.Second
		j.Schedule = "at " + j.at.Sub(start).String()
		j.Spec = "at:" + strconv.FormatInt(j.at.UnixMilli(), 10)
	}
	ttls := []time.Duration{2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second}
	j.TTL = ttls[rng.IntN(len(ttls))]
	if rng.IntN(10) < 3 {
		j.Timeout = time.Duration(float64(j.Gap) * (0.3 + rng.Float64())).Truncate(time.Millisecond)
	}
	if rng.IntN(10) < 3 {
		j.CatchUp = max(5*time.Second, time.Duration(float64(j.Gap)*(1+4*rng.Float64()))).Truncate(time.Millisecond)
	}
	j.BufferOne = rng.IntN(4) == 0
	if rng.IntN(4) == 0 {
		j.Limit, j.LimitN = "shared", 1
	}
	j.Mix = [numBehaviours]int{70, 8 + rng.IntN(10), rng.IntN(10), rng.IntN(5), rng.IntN(4), rng.IntN(8)}
	return j
}

// genPolicy draws job j's completion policy from its own generator (seed
// and job name), so that the draws of genJob, and so every seed's jobs,
// stay as they were before completion existed.
func genPolicy(seed int64, j *JobSpec) {
	h := fnv.New64a()
	fmt.Fprintf(h, "policy|%s", j.Name)
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	switch k := rng.IntN(10); {
	case k < 4: // the default: 3 attempts for interrupted ones
	case k < 5:
		j.Attempts = 1
	case k < 7:
		j.Attempts = 2 + rng.IntN(4)
	default:
		j.Attempts, j.Retry = 2+rng.IntN(3), true
		j.RetryAfter = time.Duration(rng.IntN(3000)) * time.Millisecond
	}
	if rng.IntN(5) == 0 {
		j.Window = time.Duration(float64(j.Gap) * (0.5 + 2*rng.Float64())).Truncate(time.Millisecond)
	}
}

// claimLeadOf draws replica n's claim lead (scheduler.WithClaimLead) from
// its own generator (seed and replica), so that the other draws of a seed
// stay as they were: none for half the replicas, 250 ms (the most a
// schedule a second apart allows) or 100 ms for the others.
func claimLeadOf(seed int64, n int) time.Duration {
	h := fnv.New64a()
	fmt.Fprintf(h, "lead|%d", n)
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	switch rng.IntN(4) {
	case 0:
		return 250 * time.Millisecond
	case 1:
		return 100 * time.Millisecond
	}
	return 0
}

// behaviour is what one run does.
type behaviour struct {
	kind int
	d    time.Duration // how long it works before it ends as kind says
}

// behaviourOf returns what attempt of the run of job j for (occurrence,
// trigger) does: a function of the seed and the run alone, so that it does
// not depend on which replica runs it or when. A later attempt draws anew
// (a retried failure may succeed).
func behaviourOf(seed int64, j *JobSpec, occ time.Time, trigger string, attempt int) behaviour {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s|%d|%s", j.Name, occ.UnixMilli(), trigger)
	if attempt > 1 {
		fmt.Fprintf(h, "|%d", attempt)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	total := 0
	for _, w := range j.Mix {
		total += w
	}
	pick, kind := rng.IntN(total), 0
	for kind = range numBehaviours {
		if pick < j.Mix[kind] {
			break
		}
		pick -= j.Mix[kind]
	}
	frac := 0.01 + 0.3*rng.Float64()
	if kind == behaveLong || (kind == behaveStubborn && rng.IntN(2) == 0) {
		frac = 0.8 + 2*rng.Float64()
	}
	return behaviour{kind: kind, d: time.Duration(frac * float64(j.Gap)).Truncate(time.Millisecond)}
}
