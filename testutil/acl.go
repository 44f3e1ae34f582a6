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

// ACLDenials returns what Redis refused user, as ACL LOG names it (a
// command, or a key or channel name), oldest last, leaving out except.
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
		if name == user && !slices.Contains(except, obj) {
			out = append(out, obj)
		}
	}
	return out
}
