package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// optInt is a flag holding a positive integer that remembers whether it was
// given.
type optInt struct {
	v   int
	set bool
}

// String returns the value, or "" when unset.
func (o *optInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}

// Set parses a positive whole number.
func (o *optInt) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return errors.New("must be a positive whole number")
	}
	o.v, o.set = n, true
	return nil
}

// ptr returns a pointer to the value, or nil when unset.
func (o *optInt) ptr() *int {
	if !o.set {
		return nil
	}
	v := o.v
	return &v
}

// choice is a flag holding one of a fixed set of words.
type choice struct {
	v       string
	allowed []string
	set     bool
}

// newChoice returns a choice of allowed, holding def until set.
func newChoice(def string, allowed ...string) *choice {
	return &choice{v: def, allowed: allowed}
}

// String returns the value.
func (c *choice) String() string {
	if c == nil {
		return ""
	}
	return c.v
}

// Set accepts one of the allowed words.
func (c *choice) Set(s string) error {
	for _, a := range c.allowed {
		if s == a {
			c.v, c.set = s, true
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(c.allowed, ", "))
}

// expiry is the --expires flag: a lifetime such as 90d, 12h or 1h30m.
type expiry struct {
	d time.Duration // 0 = never expires
}

// String returns the lifetime as given, "" for none.
func (x *expiry) String() string {
	if x == nil || x.d == 0 {
		return ""
	}
	return x.d.String()
}

// Set parses Nd (days) or a Go duration; the lifetime must be positive.
func (x *expiry) Set(s string) error {
	d, err := parseLifetime(s)
	if err != nil {
		return err
	}
	x.d = d
	return nil
}

// parseLifetime parses "90d" as 90 days, and anything else as a Go
// duration ("12h", "1h30m"). It must be positive.
func parseLifetime(s string) (time.Duration, error) {
	bad := fmt.Errorf("%q is not a lifetime such as 90d, 12h or 1h30m", s)
	var d time.Duration
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n > 100*365 {
			return 0, bad
		}
		d = time.Duration(n) * 24 * time.Hour
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad
		}
	}
	if d <= 0 {
		return 0, errors.New("must be positive")
	}
	return d, nil
}

// expiresAt returns now + the lifetime, or nil for a key that never expires.
func (x *expiry) expiresAt(now time.Time) *time.Time {
	if x.d == 0 {
		return nil
	}
	t := now.Add(x.d).UTC()
	return &t
}

// optBudget is an optional budget in USD, 0 (none) to 1,000,000, kept in
// millionths of a dollar as the store keeps costs.
type optBudget struct {
	micros int64
	set    bool
}

// String returns the value in USD, or "" when unset.
func (o *optBudget) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.FormatFloat(float64(o.micros)/1e6, 'f', -1, 64)
}

// Set parses USD: a number from 0 (no budget) to 1,000,000.
func (o *optBudget) Set(s string) error {
	usd, err := strconv.ParseFloat(s, 64)
	if err != nil || !(usd >= 0 && usd <= maxBudgetUSD) {
		return fmt.Errorf("must be USD from 0 (no budget) to %d", maxBudgetUSD)
	}
	o.micros, o.set = int64(math.Round(usd*1e6)), true
	return nil
}

// ptr returns a pointer to the value, or nil when unset.
func (o *optBudget) ptr() *int64 {
	if !o.set {
		return nil
	}
	return &o.micros
}
