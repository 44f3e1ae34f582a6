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
//
// Two disturbances can be added. Clock offsets (Config.Offsets) give each
// replica's scheduler a wall clock off true time by its offset, timers at
// the real pace; the lease store keeps the Redis server's clock, and
// lateness is measured on true time. A stop (Config.Stop) stalls one
// replica's process with SIGSTOP inside the window and resumes it with
// SIGCONT; the report then tells whether the occurrences due meanwhile ran,
// and how late, on the other replicas (a stalled first choice's backup
// should take them within BackupBound). The report also gives the work
// spread: each replica's runs of the window's occurrences as a ratio to the
// mean.
package schedscale
