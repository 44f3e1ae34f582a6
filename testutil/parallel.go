package testutil

import (
	"flag"
	"fmt"
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
// (flag.Parse) to see whether -parallel is on it.
//
//	func TestMain(m *testing.M) {
//		testutil.RaiseParallel(4)
//		testutil.VerifyTestMain(m)
//	}
func RaiseParallel(perCPU int) {
	if perCPU < 1 {
		panic(fmt.Sprintf("testutil: RaiseParallel(%d): want at least 1", perCPU))
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == parallelFlag })
	if given {
		return
	}
	if err := flag.Set(parallelFlag, strconv.Itoa(perCPU*runtime.GOMAXPROCS(0))); err != nil {
		panic(fmt.Sprintf("testutil: RaiseParallel: %v (called outside a test binary?)", err))
	}
}
