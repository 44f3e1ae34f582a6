// Package schedscale runs cronguard's scheduler at scale: many jobs on a
// one-second grid, registered on several replicas (child processes, so each
// replica's CPU time is its own) that share one Redis, and checks that every
// occurrence in the measured window ran exactly once.
//
// The parent starts the replicas, waits until all of them have started,
// opens the window on a whole second a warm-up later, counts Redis commands
// over the window, then stops the replicas and merges the occurrences each
// one ran. Each job's function only records its occurrence in memory; the
// records travel to the parent when the replica stops, so the measurement
// adds no Redis traffic of its own.
package schedscale
