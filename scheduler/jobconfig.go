package scheduler

import "github.com/cronguard/cronguard/lease"

// A replica keeps a registration per job for as long as the job is
// registered, and most of a replica's jobs are registered with the same
// options: their jobConfig is kept once, not once per job.

// maxSharedConfigs caps how many distinct jobConfigs a Scheduler keeps to
// share: the map is never emptied, and a replica that registers jobs with
// ever new options (an owner label per job, say) would otherwise grow it
// without end. Past the cap, a job keeps its own copy.
const maxSharedConfigs = 256

// shareConfig returns the jobConfig kept for the options equal to c,
// keeping c if none is, while fewer than maxSharedConfigs are kept. A
// jobConfig that holds a pointer (WithRetry, WithConcurrencyLimit) is not
// kept: each Register makes a new one, so it would never be shared, and
// it would keep what it points to alive after its job is removed. s.mu
// must be held.
func (s *Scheduler) shareConfig(c *jobConfig) *jobConfig {
	if c.retry != nil || c.limitSpec != nil {
		return c
	}
	if kept, ok := s.configs[*c]; ok {
		return kept
	}
	if len(s.configs) < maxSharedConfigs {
		if s.configs == nil {
			s.configs = make(map[jobConfig]*jobConfig)
		}
		s.configs[*c] = c
	}
	return c
}

// ownerOf returns the owner label of j's leases under reg: WithOwner's, or
// by default the replica's ID and the job's name ("<instance ID>/<name>",
// cut to lease.MaxOwnerLen). The default is built at each claim rather
// than kept per job.
func (s *Scheduler) ownerOf(j *job, reg *registration) string {
	if reg.owner != "" {
		return reg.owner
	}
	return truncateUTF8(s.cfg.instanceID+"/"+j.name, lease.MaxOwnerLen)
}
