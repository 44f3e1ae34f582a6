package testutil

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStartCluster_KeysSpreadOverAllPrimaries(t *testing.T) {
	c := StartCluster(t, 3)
	require.Len(t, c.Addrs, 3)
	ctx := t.Context()

	for _, addr := range c.Addrs {
		info, err := redisCLI(ctx, addr, "CLUSTER", "INFO")
		require.NoError(t, err)
		assert.Contains(t, info, "cluster_state:ok", addr)
		assert.Contains(t, info, "cluster_known_nodes:3", addr)
	}

	client := c.Client(t)
	owners := map[string]int{}
	for i := range 60 {
		key := fmt.Sprintf("k%d", i)
		require.NoError(t, client.Do(ctx, client.B().Set().Key(key).Value("v").Build()).Error())
		got, err := client.Do(ctx, client.B().Get().Key(key).Build()).ToString()
		require.NoError(t, err)
		assert.Equal(t, "v", got)
		owners[c.NodeOf(t, key)]++
	}
	assert.Len(t, owners, 3, "60 keys should land on every primary: %v", owners)

	// Each key is stored on the node NodeOf names, and only there.
	for addr, want := range owners {
		out, err := redisCLI(ctx, addr, "DBSIZE")
		require.NoError(t, err)
		assert.Equal(t, fmt.Sprint(want), strings.TrimSpace(out), addr)
	}
}

func TestStartCluster_TooFewPrimaries(t *testing.T) {
	ft := &fatalRecorder{TB: t}
	func() {
		defer func() { _ = recover() }()
		StartCluster(ft, 2)
	}()
	assert.Contains(t, ft.msg, "at least 3 primaries")
}

// fatalRecorder records the message of Fatalf and stops the calling
// function (by panicking, recovered by the test) instead of failing the
// test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f.msg)
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	panic(f.msg)
}
