package testutil

import (
	"slices"
	"testing"

	"github.com/redis/rueidis"
)

// SetACLUser creates, or replaces, user through admin with the rules of
// ACL SETUSER (after the user name), failing the test if Redis refuses.
func SetACLUser(t testing.TB, admin rueidis.Client, user string, rules ...string) {
	t.Helper()
	if err := admin.Do(t.Context(), admin.B().AclDeluser().Username(user).Build()).Error(); err != nil {
		t.Fatalf("testutil: ACL DELUSER %s: %v", user, err)
	}
	if err := admin.Do(t.Context(), admin.B().AclSetuser().Username(user).Rule(rules...).Build()).Error(); err != nil {
		t.Fatalf("testutil: ACL SETUSER %s: %v", user, err)
	}
}

// connectProbes are what rueidis (v1.0.79) sends as it connects, which a
// least-privilege user is refused without harm: CLUSTER SLOTS, or CLUSTER
// SHARDS on servers of version 8 and later (Valkey 8), to learn whether the
// server is a cluster, and CLIENT SETINFO to name the library (a command
// since Redis 7.2; Valkey has it).
var connectProbes = []string{"cluster|slots", "cluster|shards", "client|setinfo"}

// ACLDenials returns what Redis refused user, as ACL LOG names it (a
// command, or a key or channel name), oldest last, leaving out except and
// the commands the client sends as it connects (CLUSTER SLOTS, CLUSTER
// SHARDS, CLIENT SETINFO), which differ between Redis and Valkey versions.
func ACLDenials(t testing.TB, admin rueidis.Client, user string, except ...string) []string {
	t.Helper()
	entries, err := admin.Do(t.Context(), admin.B().AclLog().Count(1000).Build()).ToArray()
	if err != nil {
		t.Fatalf("testutil: ACL LOG: %v", err)
	}
	var out []string
	for _, e := range entries {
		m, err := e.AsMap()
		if err != nil {
			t.Fatalf("testutil: ACL LOG entry: %v", err)
		}
		username, object := m["username"], m["object"]
		name, _ := username.ToString()
		obj, _ := object.ToString()
		if name == user && !slices.Contains(except, obj) && !slices.Contains(connectProbes, obj) {
			out = append(out, obj)
		}
	}
	return out
}
