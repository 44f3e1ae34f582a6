// Command recheck runs the fault checker again on a directory TestFaults
// kept: the replicas' and the harness's histories (*.jsonl) and the copy of
// the accepted writes (writes.json). It prints the report and the
// violations, and exits 1 if there are any, 2 if the directory cannot be
// read. With -explain it first lists what the checker explained: the
// misses with their reasons, the duplicate starts and lease overlaps
// that Redis's data loss explains, and the occurrences of jobs with
// completion that were neither completed nor given up, or both, with
// their exception (data_lost, open_at_end, report_lost,
// commit_unreported). The report counts the interrupted, resumed and
// retried attempts and the given up occurrences the histories record.
//
//	go run ./faults/cmd/recheck /tmp/cronguard-faults-543781262
//	go run ./faults/cmd/recheck -explain /tmp/cronguard-faults-543781262
//
// Use it to try a change to the checker on a run that failed, without
// running the faults again.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cronguard/cronguard/faults"
	"github.com/cronguard/cronguard/faults/checker"
	"github.com/cronguard/cronguard/faults/history"
)

func main() {
	explain := flag.Bool("explain", false, "list the explained misses, duplicate starts, lease overlaps and completion exceptions first")
	flag.Usage = func() { fmt.Fprintln(os.Stderr, "usage: recheck [-explain] DIR (a directory TestFaults kept)") }
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	violations, err := recheck(flag.Arg(0), os.Stdout, *explain)
	if err != nil {
		fmt.Fprintln(os.Stderr, "recheck:", err)
		os.Exit(2)
	}
	if violations > 0 {
		os.Exit(1)
	}
}

// recheck checks the run kept in dir, writes the report to out (after the
// explanations, if explain) and returns the number of violations.
func recheck(dir string, out io.Writer, explain bool) (int, error) {
	events, err := history.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	if len(events) == 0 {
		return 0, fmt.Errorf("%s holds no history (*.jsonl)", dir)
	}
	writes, err := history.LoadWrites(filepath.Join(dir, history.WritesFile))
	if errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("%s has no %s: it was kept by a harness older than the writes copy", dir, history.WritesFile)
	}
	if err != nil {
		return 0, err
	}
	rep := checker.Check(checker.Input{Events: events, Writes: writes, Jobs: faults.CheckerJobs()})
	if explain {
		fmt.Fprint(out, rep.Details())
	}
	fmt.Fprint(out, rep.Table())
	return len(rep.Violations), nil
}
