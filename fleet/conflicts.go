package fleet

import "slices"

// FindConflicts finds, per job name, the first pair of replicas (in the
// order given; stores give them in ID order) that registered it with
// different fingerprints: the first registration of the name and the first
// one after it that differs. Conflicts come sorted by job name. Stores
// implement Store.Conflicts and PublishReplica's answer with it.
func FindConflicts(replicas []Replica) []Conflict {
	type reg struct {
		replica string
		job     Job
	}
	byName := map[string][]reg{}
	var names []string
	for _, r := range replicas {
		for _, j := range r.Jobs {
			if _, seen := byName[j.Name]; !seen {
				names = append(names, j.Name)
			}
			byName[j.Name] = append(byName[j.Name], reg{r.ID, j})
		}
	}
	slices.Sort(names)
	var out []Conflict
	for _, name := range names {
		regs := byName[name]
		for _, b := range regs[1:] {
			if b.job.Fingerprint != regs[0].job.Fingerprint {
				a := regs[0]
				out = append(out, Conflict{Job: name, Key: a.job.Key,
					Replicas: [2]string{a.replica, b.replica}, Jobs: [2]Job{a.job, b.job}})
				break
			}
		}
	}
	return out
}

// Involving returns the conflicts in which replica id is one of the pair:
// the ones a replica reports as its own.
func Involving(conflicts []Conflict, id string) []Conflict {
	var mine []Conflict
	for _, c := range conflicts {
		if c.Replicas[0] == id || c.Replicas[1] == id {
			mine = append(mine, c)
		}
	}
	return mine
}
