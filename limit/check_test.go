package limit

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fakeCounter is a Counter whose behaviour is given by function fields.
type fakeCounter struct {
	take func(key string, limit int64) (Result, error)
	peek func(key string, limit int64) (Result, error)
}

func (f fakeCounter) Take(_ context.Context, key string, limit int64) (Result, error) {
	return f.take(key, limit)
}

func (f fakeCounter) Peek(_ context.Context, key string, limit int64) (Result, error) {
	return f.peek(key, limit)
}

func TestResultRetryAfter(t *testing.T) {
	now := time.Unix(1000, 0)
	tests := []struct {
		reset time.Time
		want  int
	}{
		{now.Add(30 * time.Second), 30},
		{now.Add(29*time.Second + time.Millisecond), 30},
		{now.Add(200 * time.Millisecond), 1},
		{now, 1},
		{now.Add(-time.Minute), 1},
		{time.Time{}, 1},
	}
	for _, tt := range tests {
		if got := (Result{Reset: tt.reset}).RetryAfter(now); got != tt.want {
			t.Errorf("RetryAfter with reset %v: %d, want %d", tt.reset.Sub(now), got, tt.want)
		}
	}
}

func TestCheckReturnsBindingRule(t *testing.T) {
	awayFromBoundary(t, Window, 5*time.Second)
	c := NewMemoryCounter()
	rules := []Rule{{"endpoint", 10}, {"account", 3}}
	for i := range 3 {
		res, err := Check(context.Background(), c, rules...)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Allowed || res.Limit != 3 || res.Remaining != int64(2-i) {
			t.Fatalf("check %d: %+v, want the account rule, remaining %d", i+1, res, 2-i)
		}
	}
	res, err := Check(context.Background(), c, rules...)
	if err != nil || res.Allowed || res.Limit != 3 || res.Remaining != 0 {
		t.Fatalf("4th check: %+v, %v; want rejected by the account rule", res, err)
	}
	if p := peek(t, c, "endpoint", 10); p.Remaining != 6 {
		t.Errorf("endpoint remaining %d, want 6 (4 checks counted)", p.Remaining)
	}
}

func TestCheckDoesNotCountRulesAfterRejection(t *testing.T) {
	awayFromBoundary(t, Window, 5*time.Second)
	c := NewMemoryCounter()
	rules := []Rule{{"endpoint", 1}, {"account", 60}}
	for range 3 {
		if _, err := Check(context.Background(), c, rules...); err != nil {
			t.Fatal(err)
		}
	}
	if p := peek(t, c, "account", 60); p.Remaining != 59 {
		t.Errorf("account remaining %d, want 59: rejected requests were counted", p.Remaining)
	}
}

func TestCheckRejectsWithLatestReset(t *testing.T) {
	base := time.Now().Add(time.Minute)
	state := map[string]Result{
		"a": {Limit: 5, Remaining: 0, Reset: base, Allowed: false},
		"b": {Limit: 9, Remaining: 0, Reset: base.Add(20 * time.Second)},
		"c": {Limit: 7, Remaining: 3, Reset: base.Add(40 * time.Second), Allowed: true},
	}
	taken := map[string]int{}
	c := fakeCounter{
		take: func(key string, _ int64) (Result, error) { taken[key]++; return state[key], nil },
		peek: func(key string, _ int64) (Result, error) { return state[key], nil },
	}
	res, err := Check(context.Background(), c, Rule{"a", 5}, Rule{"b", 9}, Rule{"c", 7})
	if err != nil {
		t.Fatal(err)
	}
	if res.Allowed || res.Limit != 9 || !res.Reset.Equal(state["b"].Reset) {
		t.Errorf("got %+v, want rejected with rule b (latest reset of the exhausted)", res)
	}
	if taken["b"] != 0 || taken["c"] != 0 {
		t.Errorf("rules after the rejecting one were taken: %v", taken)
	}
}

func TestCheckErrors(t *testing.T) {
	boom := errors.New("boom")
	c := fakeCounter{
		take: func(key string, _ int64) (Result, error) {
			if key == "bad" {
				return Result{}, boom
			}
			return Result{Limit: 1, Allowed: key != "full"}, nil
		},
		peek: func(string, int64) (Result, error) { return Result{}, boom },
	}
	if _, err := Check(context.Background(), c, Rule{"ok", 1}, Rule{"bad", 1}); !errors.Is(err, boom) {
		t.Errorf("take error: %v, want boom", err)
	}
	if _, err := Check(context.Background(), c, Rule{"full", 1}, Rule{"ok", 1}); !errors.Is(err, boom) {
		t.Errorf("peek error: %v, want boom", err)
	}
	if res, err := Check(context.Background(), c); err != nil || !res.Allowed {
		t.Errorf("no rules: %+v, %v; want allowed", res, err)
	}
}
