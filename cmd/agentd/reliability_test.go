package main

import (
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The reliability suite (the crash and hostile-client tests) runs only
// under `make reliability`, which sets reliabilityEnv: it takes minutes
// and `make test` would otherwise run it a second time.
const reliabilityEnv = "AGENTD_RELIABILITY"

// needReliability skips the test unless the reliability suite was asked for.
func needReliability(t *testing.T) {
	t.Helper()
	if os.Getenv(reliabilityEnv) == "" {
		t.Skip("part of the reliability suite: run `make reliability` (" + reliabilityEnv + "=1)")
	}
}

// budgetInt reads an integer budget knob of the suite, def when unset.
func budgetInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// budgetDuration reads a duration budget knob of the suite, def when unset.
func budgetDuration(t *testing.T, name string, def time.Duration) time.Duration {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("%s=%q: want a positive duration such as 2s", name, v)
	}
	return d
}

// loadAccount creates on db, before serve first starts on it, an
// enterprise account whose rate limits and agent quota no test load
// reaches, and returns a write key of it. serve then bootstraps nothing.
func loadAccount(t *testing.T, db string) string {
	t.Helper()
	mustAgentd(t, db, "accounts", "create", "load", "--tier", "enterprise", "--rpm", "100000000",
		"--endpoint-multiplier", "1000000", "--agent-quota", "1000000")
	return keyFrom(t, mustAgentd(t, db, "keys", "create", "--account", "load").stdout)
}

// raiseFileLimit raises the soft limit of open files to at least n (up to
// the hard limit), for the test and the servers it spawns, which inherit it.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Fatalf("at most %d open files (hard limit); the test needs %d", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("setrlimit: %v", err)
	}
}

// percentile returns the p-th quantile (0 < p ≤ 1) of ds, 0 for none.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
