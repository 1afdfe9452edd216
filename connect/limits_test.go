package connect

import (
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tracked is how many users p remembers.
func tracked(p *Policy) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.users)
}

// TestLimitsPolicyUserRateLimitSetting: userRateLimit is read from the
// settings; absent, or a value the contract refuses, means the default.
func TestLimitsPolicyUserRateLimitSetting(t *testing.T) {
	for _, tc := range []struct {
		settings string
		want     int
	}{
		{``, DefaultUserRateLimit},
		{`null`, DefaultUserRateLimit},
		{`{}`, DefaultUserRateLimit},
		{`{"userRateLimit": 3}`, 3},
		{`{"userRateLimit": 1}`, 1},
		{`{"userRateLimit": 600}`, 600},
		{`{"userRateLimit": 0}`, DefaultUserRateLimit},
		{`{"userRateLimit": 601}`, DefaultUserRateLimit},
		{`{"userRateLimit": -5}`, DefaultUserRateLimit},
		{`{"userRateLimit": 2.5}`, DefaultUserRateLimit},
		{`{"userRateLimit": "20"}`, DefaultUserRateLimit},
		{`{"userRateLimit": 20, "allowedUsers": "ada"}`, 20},
		{`{"userRateLimit": `, DefaultUserRateLimit},
	} {
		if got := NewPolicy(json.RawMessage(tc.settings)).UserRateLimit(); got != tc.want {
			t.Errorf("NewPolicy(%s).UserRateLimit() = %d, want %d", tc.settings, got, tc.want)
		}
	}
}

// TestLimitsPolicyRateLimitSlidingWindow: a user gets userRateLimit messages
// within any minute; the next is RateLimited until the oldest admitted one
// is a minute old. Refused messages do not count, and each user has a
// window of their own.
func TestLimitsPolicyRateLimitSlidingWindow(t *testing.T) {
	p := NewPolicy(json.RawMessage(`{"userRateLimit": 3}`))
	ada, bob := Sender{ID: "1", Username: "ada"}, Sender{ID: "2", Username: "bob"}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	steps := []struct {
		user Sender
		at   time.Duration
		want Verdict
	}{
		{ada, 0, Admitted},
		{ada, 10 * time.Second, Admitted},
		{ada, 20 * time.Second, Admitted},
		{ada, 30 * time.Second, RateLimited},
		{bob, 30 * time.Second, Admitted}, // a window per user
		{ada, 59 * time.Second, RateLimited},
		{ada, 60 * time.Second, Admitted}, // the first is a minute old
		{ada, 61 * time.Second, RateLimited},
		{ada, 69 * time.Second, RateLimited}, // refused ones do not count...
		{ada, 70 * time.Second, Admitted},    // ...so the second's minute is what frees one
		{ada, 71 * time.Second, RateLimited},
		{Sender{ID: "1", Username: "renamed"}, 72 * time.Second, RateLimited}, // the id is the user
	}
	for i, s := range steps {
		if got := p.Admit(s.user, false, t0.Add(s.at)); got != s.want {
			t.Fatalf("step %d: %+v at +%v: %v, want %v", i, s.user, s.at, got, s.want)
		}
	}
	// The rate limit holds in private chats too.
	if got := p.Admit(ada, true, t0.Add(73*time.Second)); got != RateLimited {
		t.Fatalf("private message past the limit: %v, want %v", got, RateLimited)
	}
}

// TestLimitsPolicyDefaultRateLimit: without userRateLimit, the 11th message
// within a minute is refused.
func TestLimitsPolicyDefaultRateLimit(t *testing.T) {
	p := NewPolicy(nil)
	t0 := time.Now()
	for i := range DefaultUserRateLimit {
		if got := p.Admit(Sender{ID: "9"}, false, t0.Add(time.Duration(i)*time.Second)); got != Admitted {
			t.Fatalf("message %d: %v, want admitted", i+1, got)
		}
	}
	if got := p.Admit(Sender{ID: "9"}, false, t0.Add(30*time.Second)); got != RateLimited {
		t.Fatalf("message %d: %v, want rate limited", DefaultUserRateLimit+1, got)
	}
}

// TestLimitsPolicyAllowedUsers: a non-empty allowedUsers answers only its users
// in private chats, by exact id or by username compared case-insensitively
// without '@'; an entry of digits only is an id, never a username (a user
// cannot pass for someone by taking their id as a name). Group messages
// and an empty list are not restricted.
func TestLimitsPolicyAllowedUsers(t *testing.T) {
	p := NewPolicy(json.RawMessage(`{"allowedUsers": ["@Ada", "12345", " bob ", "@777", "", "@"]}`))
	for _, tc := range []struct {
		user    Sender
		private bool
		want    Verdict
	}{
		{Sender{ID: "1", Username: "ada"}, true, Admitted},
		{Sender{ID: "1", Username: "ADA"}, true, Admitted},
		{Sender{ID: "1", Username: "@aDa"}, true, Admitted},
		{Sender{ID: "12345"}, true, Admitted},
		{Sender{ID: "2", Username: "Bob"}, true, Admitted},
		{Sender{ID: "3", Username: "777"}, true, Admitted}, // "@777" names a username
		{Sender{ID: "777"}, true, NotAllowed},
		{Sender{ID: "4", Username: "12345"}, true, NotAllowed}, // "12345" is an id
		{Sender{ID: "012345"}, true, NotAllowed},               // ids compare exactly
		{Sender{ID: "5", Username: "adam"}, true, NotAllowed},
		{Sender{ID: "6"}, true, NotAllowed},
		{Sender{}, true, NotAllowed},
		{Sender{ID: "5", Username: "adam"}, false, Admitted}, // groups are not restricted
	} {
		if got := p.Admit(tc.user, tc.private, time.Now()); got != tc.want {
			t.Errorf("Admit(%+v, private=%v) = %v, want %v", tc.user, tc.private, got, tc.want)
		}
	}
	if n := tracked(p); n != 5 {
		t.Errorf("%d users remembered, want the 5 admitted ones only (a refused stranger costs no memory)", n)
	}
	open := NewPolicy(json.RawMessage(`{"allowedUsers": []}`))
	if got := open.Admit(Sender{ID: "5", Username: "adam"}, true, time.Now()); got != Admitted {
		t.Errorf("empty allowedUsers: %v, want admitted", got)
	}
}

// TestLimitsPolicyForgetsIdleUsers: a user with no message admitted within the
// last minute is forgotten, so memory follows the users active now.
func TestLimitsPolicyForgetsIdleUsers(t *testing.T) {
	p := NewPolicy(json.RawMessage(`{"userRateLimit": 1}`))
	t0 := time.Now()
	for i := range 100 {
		p.Admit(Sender{ID: strconv.Itoa(i)}, false, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if n := tracked(p); n != 100 {
		t.Fatalf("%d users remembered, want 100", n)
	}
	if got := p.Admit(Sender{ID: "99"}, false, t0.Add(30*time.Second)); got != RateLimited {
		t.Fatalf("user 99 within its minute: %v, want rate limited", got)
	}
	p.Admit(Sender{ID: "new"}, false, t0.Add(rateWindow+50*time.Millisecond))
	if n := tracked(p); n != 1+(100-51) {
		t.Fatalf("%d users remembered after a minute, want the newcomer and the 49 active within it", n)
	}
	if got := p.Admit(Sender{ID: "0"}, false, t0.Add(rateWindow+time.Second)); got != Admitted {
		t.Fatalf("forgotten user: %v, want admitted", got)
	}
	p.Admit(Sender{ID: "new"}, false, t0.Add(3*rateWindow))
	if n := tracked(p); n != 1 {
		t.Fatalf("%d users remembered after every other was idle a minute, want 1", n)
	}
}

// TestLimitsPolicyCapsTrackedUsers: while the table is full of users active
// within the minute, a new user is refused (known ones go on); once some
// are idle a minute, new users are admitted again.
func TestLimitsPolicyCapsTrackedUsers(t *testing.T) {
	p := NewPolicy(nil)
	p.maxUsers = 3
	t0 := time.Now()
	for i, id := range []string{"a", "b", "c"} {
		if got := p.Admit(Sender{ID: id}, false, t0.Add(time.Duration(i)*time.Second)); got != Admitted {
			t.Fatalf("user %s: %v", id, got)
		}
	}
	if got := p.Admit(Sender{ID: "d"}, false, t0.Add(5*time.Second)); got != RateLimited {
		t.Fatalf("new user with the table full: %v, want rate limited", got)
	}
	if got := p.Admit(Sender{ID: "b"}, false, t0.Add(6*time.Second)); got != Admitted {
		t.Fatalf("known user with the table full: %v, want admitted", got)
	}
	if got := p.Admit(Sender{ID: "d"}, false, t0.Add(rateWindow+time.Second)); got != Admitted {
		t.Fatalf("new user once a is idle a minute: %v, want admitted", got)
	}
	if n := tracked(p); n > 3 {
		t.Fatalf("%d users remembered, want at most 3", n)
	}
}

// TestLimitsPolicyConcurrent: many goroutines admitting at once (run with
// -race) never let one user past its limit; then, with time running on
// over minutes, sweeps run alongside admissions and forget every idle user.
func TestLimitsPolicyConcurrent(t *testing.T) {
	p := NewPolicy(json.RawMessage(`{"userRateLimit": 50, "allowedUsers": ["ada"]}`))
	t0 := time.Now()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if p.Admit(Sender{ID: "1", Username: "ada"}, true, t0.Add(time.Duration(i)*time.Millisecond)) == Admitted {
					admitted.Add(1)
				}
				p.Admit(Sender{ID: "2", Username: "eve"}, true, t0)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 50 {
		t.Fatalf("%d messages of one user admitted within a second, want exactly its limit 50", n)
	}

	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				p.Admit(Sender{ID: strconv.Itoa(g*1000 + i)}, false, t0.Add(time.Duration(i)*2*time.Second))
			}
		}()
	}
	wg.Wait()
	p.Admit(Sender{ID: "last"}, false, t0.Add(time.Hour))
	if n := tracked(p); n != 1 {
		t.Fatalf("%d users remembered after an idle hour, want 1", n)
	}
}
