package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/cronguard/cronguard/bench/leasebench"
)

// machineHeader describes the machine and the Redis the run used.
func machineHeader(ctx context.Context, admin *leasebench.Admin) string {
	cpu := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	redisVersion := "unknown"
	if info, err := admin.Info(ctx, "server"); err == nil {
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				redisVersion = v
			}
		}
	}
	return fmt.Sprintf("Machine: %d CPUs (runtime.NumCPU), GOMAXPROCS %d, CPU %q, redis-server %s on loopback, %s %s/%s, %s.\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpu, redisVersion, runtime.Version(), runtime.GOOS, runtime.GOARCH,
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
}
