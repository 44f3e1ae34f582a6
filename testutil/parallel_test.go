package testutil

import (
	"flag"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRaiseParallel_RefusesLessThanOnePerCPU(t *testing.T) {
	for _, n := range []int{0, -1} {
		err := RaiseParallel(n)
		require.Error(t, err, "perCPU %d", n)
		assert.Contains(t, err.Error(), "perCPU must be at least 1")
	}
}

func TestRaiseParallel_SetsPerCPUUnlessTheCommandLineGivesIt(t *testing.T) {
	f := flag.Lookup(parallelFlag)
	require.NotNil(t, f, "a test binary defines -%s", parallelFlag)
	before := f.Value.String()
	t.Cleanup(func() { require.NoError(t, flag.Set(parallelFlag, before)) })
	given := onCommandLine(parallelFlag) // before RaiseParallel, whose flag.Set counts as given

	require.NoError(t, RaiseParallel(3))
	if given {
		assert.Equal(t, before, f.Value.String(), "-parallel on the command line wins")
	} else {
		assert.Equal(t, strconv.Itoa(3*runtime.GOMAXPROCS(0)), f.Value.String())
	}
}
