package redislease

import "strings"

// The control plane's keys (package fleet). A job's pause, trigger queue
// and status share its lease's hash tag G, so that the scripts that run on
// every acquire and release reach them in the lease's slot; the registry's
// keys share one tag of their own, {fleet}.
//
//	P:pause:{G}                          the pause: "<atMs>\n<by>\n<note>"
//	P:trigger:{G}                        queued triggers: "<expiresAtMs>|<queuedAtMs>|<id>"
//	P:status:{G}                         the last run's status, JSON
//	P:history:{G}                        the last runs' statuses, JSON, newest first (a list)
//	P:attempt:{G}                        the completion record (completion.go)
//	P:open                               the index of open occurrences (completion.go)
//	P:fleet:{fleet}:replicas           live replicas: sorted set, ID -> expiry (server ms)
//	P:fleet:{fleet}:replica:<ID>       a replica's entry, JSON, expiring
//	P:fleet:{fleet}:generation         changes whenever an entry is published
//	P:fleet:{fleet}:jobs:<digest>      a job list, JSON, named by its content, expiring
//	P:control                            the control channel (PUBLISH/SUBSCRIBE)

// tagged returns <prefix>:<namespace>:{<tag>}.
func tagged(prefix, namespace, tag string) string {
	var b strings.Builder
	b.Grow(len(prefix) + len(namespace) + len(tag) + 4)
	writeTagged(&b, prefix, ":"+namespace+":{", tag)
	return b.String()
}

func (ks keyset) pause(prefix string) string   { return tagged(prefix, "pause", ks.tag) }
func (ks keyset) trigger(prefix string) string { return tagged(prefix, "trigger", ks.tag) }
func (ks keyset) status(prefix string) string  { return tagged(prefix, "status", ks.tag) }
func (ks keyset) history(prefix string) string { return tagged(prefix, "history", ks.tag) }

// fleetKeys are the registry's keys under a prefix.
type fleetKeys struct {
	replicas, generation string
	entry                string // followed by the replica's ID
	jobList              string // followed by the digest of the list
}

func fleetKeysFor(prefix string) fleetKeys {
	base := tagged(prefix, "fleet", "fleet")
	return fleetKeys{
		replicas:   base + ":replicas",
		generation: base + ":generation",
		entry:      base + ":replica:",
		jobList:    base + ":jobs:",
	}
}

// controlChannel is the control channel under a prefix.
func controlChannel(prefix string) string { return prefix + ":control" }
