package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cronguard/cronguard/fleet"
)

func TestFindConflicts(t *testing.T) {
	job := func(name, fp string) fleet.Job { return fleet.Job{Name: name, Key: "job:" + name, Fingerprint: fp} }
	replicas := []fleet.Replica{
		{ID: "a", Jobs: []fleet.Job{job("report", "1"), job("tick", "x")}},
		{ID: "b", Jobs: []fleet.Job{job("report", "1"), job("tick", "y")}},
		{ID: "c", Jobs: []fleet.Job{job("report", "2"), job("tick", "z")}},
	}
	got := fleet.FindConflicts(replicas)
	assert.Equal(t, []fleet.Conflict{
		{Job: "report", Key: "job:report", Replicas: [2]string{"a", "c"}, Jobs: [2]fleet.Job{job("report", "1"), job("report", "2")}},
		{Job: "tick", Key: "job:tick", Replicas: [2]string{"a", "b"}, Jobs: [2]fleet.Job{job("tick", "x"), job("tick", "y")}},
	}, got, "one conflict per name, sorted by name: the first registration and the first that differs from it")
	assert.Empty(t, fleet.FindConflicts(replicas[:1]), "one replica has no conflict")
	assert.Empty(t, fleet.FindConflicts(nil))
}

func TestInvolving(t *testing.T) {
	a := fleet.Conflict{Job: "a", Replicas: [2]string{"r1", "r2"}}
	b := fleet.Conflict{Job: "b", Replicas: [2]string{"r2", "r3"}}
	assert.Equal(t, []fleet.Conflict{a}, fleet.Involving([]fleet.Conflict{a, b}, "r1"))
	assert.Equal(t, []fleet.Conflict{a, b}, fleet.Involving([]fleet.Conflict{a, b}, "r2"))
	assert.Equal(t, []fleet.Conflict{b}, fleet.Involving([]fleet.Conflict{a, b}, "r3"))
	assert.Empty(t, fleet.Involving([]fleet.Conflict{a, b}, "r4"))
}
