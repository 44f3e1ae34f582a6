package main

import (
	"testing"

	"github.com/cronguard/cronguard/testutil"
)

// TestMain checks for leaked goroutines (the rueidis clients of the
// commands and of the test fleets are closed by then; testutil waits out
// their reconnect back-off).
func TestMain(m *testing.M) { testutil.VerifyTestMain(m) }
