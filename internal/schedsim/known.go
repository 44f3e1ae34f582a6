package schedsim

// KnownDefects are the checks (Checks) that today's scheduler is known to
// break, with the defect behind each. TestSimulation reports their
// violations without failing, unless -sim.strict is given. Once a defect
// is fixed, delete its entry: every check then fails the suite.
var KnownDefects = map[string]string{}
