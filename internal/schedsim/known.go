package schedsim

// KnownDefects are the checks (Checks) that today's scheduler is known to
// break, with the defect behind each. TestSimulation reports their
// violations without failing, unless -sim.strict is given. Once a defect
// is fixed, delete its entry: every check then fails the suite.
var KnownDefects = map[string]string{
	"trigger": "a trigger that waits behind a run is lost when that run does not hand it on: its replica shut down or " +
		"crashed, its job was removed and registered again, or it outlived its lease (timeout, ignoring its context); " +
		"the other replicas never look again and the trigger lapses",
	"catch-up": "the catch-up that a run which outlived later occurrences owes is dropped when a trigger waits at the run's end " +
		"(the trigger takes the job's place), or when the job was removed and registered again meanwhile",
	"remove": "Remove does not stop an OverlapBufferOne occurrence already waiting: it claims its round after Remove",
	"replica-overlap": "Remove then Register of the same name forgets the run still executing: the new registration starts " +
		"a run of the job beside it on the same replica",
	"pause-trigger": "a trigger queued before a pause runs during the pause",
	"register":      "Remove keeps the job's concurrency limit: registering it again with another n fails",
	"write": "a triggered run's occurrence is its start time, so a later claim of an earlier scheduled occurrence " +
		"(a late replica, a catch-up) is refused by fencing.AdvanceOnce as a duplicate (DESIGN 16: runs' occurrences must not go back)",
	"reported-jump": "a clock stepped back makes a replica's timer fire just before the occurrence; the firing maps to the " +
		"previous occurrence and is dropped as a duplicate, in silence; the ledger reports it only if a later win covers it " +
		"(a round recorded as paused does not)",
}
