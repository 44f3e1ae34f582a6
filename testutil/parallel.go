package testutil

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
)

// parallelFlag is the testing package's name of go test's -parallel.
const parallelFlag = "test.parallel"

// RaiseParallel sets go test's -parallel to perCPU times GOMAXPROCS,
// unless the command line gives -parallel. It is for a package whose
// parallel tests spend their time waiting, on the real clock, for
// schedules, TTLs and the servers they start, not computing: go test runs
// at most -parallel of them at once, GOMAXPROCS by default, so that on a
// 2-core machine two tests sleeping through a 10s schedule hold both slots
// while the CPU idles. Tests that compute stay serial (no t.Parallel), and
// run alone before the parallel ones, as before.
//
// Call it from TestMain, before m.Run; it parses the command line
// (flag.Parse) to see whether -parallel is on it. It returns an error for
// perCPU below 1, and outside a test binary (no -parallel flag to set).
//
//	func TestMain(m *testing.M) {
//		testutil.MustRaiseParallel(4)
//		testutil.VerifyTestMain(m)
//	}
func RaiseParallel(perCPU int) error {
	if perCPU < 1 {
		return fmt.Errorf("testutil: RaiseParallel(%d): perCPU must be at least 1", perCPU)
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	if onCommandLine(parallelFlag) {
		return nil
	}
	if err := flag.Set(parallelFlag, strconv.Itoa(perCPU*runtime.GOMAXPROCS(0))); err != nil {
		return fmt.Errorf("testutil: RaiseParallel: %w (called outside a test binary?)", err)
	}
	return nil
}

// onCommandLine reports whether the command line set the flag name.
func onCommandLine(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// MustRaiseParallel is RaiseParallel for TestMain: on an error it prints
// it and exits the test binary with status 2, as the testing package does
// for a bad flag.
func MustRaiseParallel(perCPU int) {
	if err := RaiseParallel(perCPU); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}
