// Package schedsim is a deterministic simulation of a whole cronguard fleet:
// N schedulers (replicas) on one store, in one testing/synctest bubble,
// driven from one int64 seed through random jobs and random operations
// (register, remove, pause, resume, trigger, shutdown, crash, restart,
// partitions, store outages, store wipes, clock jumps), and a checker that
// holds the recorded history to the scheduler's properties (DESIGN.md,
// sections 7, 10, 11, 13, 15 and 16).
//
// It uses only the public API of scheduler, lease, lease/memory, fleet,
// inspect and fencing, so that it keeps working whatever the scheduler's
// internals become. The seeds run from simulation_test.go; README.md says
// how to run them and what each property means.
//
// What it does not guarantee: a seed fixes the jobs, the operations and
// when they happen, and every choice a job makes; it does not fix the
// order in which goroutines that are runnable at one instant of the
// bubble's clock run (Go's scheduler picks), so two runs of one seed can
// interleave differently at equal instants.
package schedsim
