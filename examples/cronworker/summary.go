package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cronguard/cronguard/scheduler"
)

// summary is what the run did: the occurrences as the database recorded
// them, and each replica's scheduler counters.
type summary struct {
	dbPath    string
	from, to  time.Time // the occurrence window read from the database
	jobs      []jobSummary
	columns   []string // replicas that wrote rows, sorted (with a shared -db, other processes' too)
	replicas  []replicaSummary
	held      []string // "job: owner" for leases this process still holds
	dupTotal  int
	staleRejs uint64
}

type jobSummary struct {
	name        string
	occurrences int            // distinct occurrences written
	byReplica   map[string]int // rows per replica
	duplicates  int            // rows beyond the first for an occurrence
}

type replicaSummary struct {
	name  string
	stats scheduler.Stats
	stale uint64
}

// summarize reads the rows written for occurrences in [from, to] and the
// replicas' counters, and checks which job leases are still held by this
// process's replicas.
func summarize(ctx context.Context, dbPath string, replicas []*replica, from, to time.Time) (*summary, error) {
	if len(replicas) == 0 {
		return nil, fmt.Errorf("summary: no replicas")
	}
	rows, err := readRuns(ctx, replicas[0].db, from, to)
	if err != nil {
		return nil, err
	}
	s := &summary{dbPath: dbPath, from: from, to: to}
	byJob := map[string]*jobSummary{}
	perOccurrence := map[string]int{} // job + occurrence -> rows
	cols := map[string]bool{}
	for _, row := range rows {
		j := byJob[row.job]
		if j == nil {
			j = &jobSummary{name: row.job, byReplica: map[string]int{}}
			byJob[row.job] = j
		}
		j.byReplica[row.replica] += row.rows
		cols[row.replica] = true
		perOccurrence[fmt.Sprintf("%s\x00%d", row.job, row.occurrence)] += row.rows
	}
	for key, n := range perOccurrence {
		j := byJob[key[:strings.IndexByte(key, 0)]]
		j.occurrences++
		j.duplicates += n - 1
		s.dupTotal += n - 1
	}
	for _, name := range slices.Sorted(maps.Keys(byJob)) {
		s.jobs = append(s.jobs, *byJob[name])
	}
	s.columns = slices.Sorted(maps.Keys(cols))

	ours := map[string]bool{}
	for _, r := range replicas {
		ours[r.name] = true
		s.replicas = append(s.replicas, replicaSummary{name: r.name, stats: r.sched.Stats(), stale: r.stale.Load()})
		s.staleRejs += r.stale.Load()
	}
	for _, job := range []string{reportJob, tickJob, rebuildJob} {
		owner, err := replicas[0].leaseHeld(ctx, job)
		if err != nil {
			return nil, err
		}
		// The scheduler's owner label is "<instance ID>/<job>".
		if owner != "" && ours[strings.TrimSuffix(owner, "/"+job)] {
			s.held = append(s.held, job+": "+owner)
		}
	}
	return s, nil
}

// print writes the summary as tables.
func (s *summary) print(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "\nSummary (occurrences %s to %s, database %s)\n\n",
		s.from.Format("15:04:05"), s.to.Format("15:04:05"), s.dbPath)

	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "JOB\tOCCURRENCES\t%s\tDUPLICATES\n", strings.Join(s.columns, "\t"))
	for _, j := range s.jobs {
		cells := make([]string, len(s.columns))
		for i, c := range s.columns {
			cells[i] = fmt.Sprint(j.byReplica[c])
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\n", j.name, j.occurrences, strings.Join(cells, "\t"), j.duplicates)
	}
	_ = tw.Flush()
	b.WriteString("\n")

	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tRUNS\tSUCCEEDED\tFAILED\tSKIPPED CLAIMED\tSKIPPED LOCKED\tSKIPPED OTHER\tACQUIRE FAILED\tLEASE LOST\tRELEASED\tSTALE REJECTED")
	for _, r := range s.replicas {
		st := r.stats
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", r.name,
			st.Started, st.Succeeded, st.Failed, st.SkipClaimed, st.SkipLocked,
			st.SkipClockSkew+st.SkipShutdown, st.AcquireFailed, st.LeaseLost, st.Released, r.stale)
	}
	_ = tw.Flush()

	fmt.Fprintf(&b, "\nduplicates: %d (rows for a job and occurrence already written)\n", s.dupTotal)
	fmt.Fprintf(&b, "stale writes rejected: %d (fenced writes refused with fencing.ErrStale)\n", s.staleRejs)
	if len(s.held) == 0 {
		b.WriteString("leases held after shutdown: 0\n")
	} else {
		fmt.Fprintf(&b, "leases held after shutdown: %d (%s)\n", len(s.held), strings.Join(s.held, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
