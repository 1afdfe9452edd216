package testutil

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fatalT records the Fatalf it is given instead of failing the test, and
// ends the goroutine as t.Fatalf does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}

func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic(f)
}

// run calls fn with a fatalT and returns what it failed with, "" if
// nothing.
func run(fn func(t testing.TB)) (msg string) {
	f := &fatalT{}
	defer func() {
		if r := recover(); r != nil && r != f {
			panic(r)
		}
		msg = f.msg
	}()
	fn(f)
	return ""
}

func TestWaitReturnsOnceTheCheckPasses(t *testing.T) {
	n := 0
	msg := run(func(t testing.TB) {
		wait(t, "three calls", time.Second, func() error {
			if n++; n < 3 {
				return fmt.Errorf("call %d", n)
			}
			return nil
		})
	})
	if msg != "" || n != 3 {
		t.Fatalf("failed with %q after %d calls; want success at the third", msg, n)
	}
}

func TestWaitReportsTheLastCheck(t *testing.T) {
	n := 0
	msg := run(func(t testing.TB) {
		wait(t, "the state", 50*time.Millisecond, func() error { n++; return fmt.Errorf("state %d", n) })
	})
	if want := fmt.Sprintf("the state: not within 50ms; last: state %d", n); msg != want || n < 2 {
		t.Fatalf("failed with %q after %d checks; want %q", msg, n, want)
	}
}

func TestWithinFailsALateState(t *testing.T) {
	start := time.Now()
	msg := run(func(t testing.TB) {
		Within(t, "late", 20*time.Millisecond, func() error {
			if time.Since(start) < 60*time.Millisecond {
				return errors.New("not yet")
			}
			return nil
		})
	})
	if !strings.HasPrefix(msg, "late: after ") || !strings.HasSuffix(msg, "beyond the 20ms promised") {
		t.Fatalf("failed with %q", msg)
	}
	if msg := run(func(t testing.TB) { Within(t, "at once", time.Second, func() error { return nil }) }); msg != "" {
		t.Fatalf("a state in time failed with %q", msg)
	}
}

func TestEqual(t *testing.T) {
	if err := Equal("replies", 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := Equal("replies", 1, 2); err == nil || err.Error() != "replies 1, want 2" {
		t.Fatalf("Equal(1, 2) = %v", err)
	}
}

func TestUnavailableSkipsOutsideCIAndFailsInCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		var skipped, failed bool
		rec := &recordingTB{TB: t, skip: &skipped, fail: &failed}
		done := make(chan struct{})
		go func() { // Skipf and Fatalf end the goroutine, as in a test.
			defer close(done)
			Unavailable(rec, "redis at 127.0.0.1:6379", errors.New("connection refused"))
		}()
		<-done
		if ci == "" && (!skipped || failed) {
			t.Errorf("CI unset: skipped %v, failed %v; want a skip", skipped, failed)
		}
		if ci != "" && (skipped || !failed) {
			t.Errorf("CI set: skipped %v, failed %v; want a failure", skipped, failed)
		}
	}
}

// recordingTB records Skipf and Fatalf instead of ending the real test.
type recordingTB struct {
	testing.TB
	skip, fail *bool
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Skipf(string, ...any) { *r.skip = true; runtime.Goexit() }

func (r *recordingTB) Fatalf(string, ...any) { *r.fail = true; runtime.Goexit() }
