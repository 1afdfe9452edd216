// Package cronspec reads a schedule's cron expression and finds its due
// times in a time zone, daylight-saving changes included, as agentd's
// schedules decide: a wall-clock time that does not exist on a day (the
// clocks jump over it) is due at the first minute after it that does, and
// one that happens twice (the clocks go back) is due once, the first time.
//
// github.com/robfig/cron/v3 parses the expressions. Its own Next is not
// used: walking instants hour by hour it skips a time the clocks jump
// over (a daily 02:30 in Berlin misses the spring-forward day) and fires
// twice in the hour the clocks repeat; it also treats a stepped field
// such as `*/2` as restricted where standard cron does not. So Next here
// walks local calendar days and wall-clock times instead, and resolves
// each wall time to an instant itself.
package cronspec

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Spec is a parsed cron expression.
type Spec struct {
	minute, hour, dom, month, dow uint64
	// domAny and dowAny are set when the field is unrestricted (begins with
	// `*` or `?`): only when both day fields are restricted does a day
	// match either of them, as in standard cron.
	domAny, dowAny bool
}

// descriptors are the names a schedule may use instead of five fields.
var descriptors = map[string]bool{"@hourly": true, "@daily": true, "@weekly": true, "@monthly": true, "@yearly": true}

// parser reads five fields, or a descriptor.
var parser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// starBit is robfig's mark of a field given as `*` (the top bit).
const starBit = 1 << 63

// Parse reads expr: five fields (minute hour day-of-month month
// day-of-week) with `*`, lists, ranges and steps, or one of the
// descriptors @hourly, @daily, @weekly, @monthly, @yearly. Its error says
// what is wrong in words a client may read.
func Parse(expr string) (Spec, error) {
	expr = strings.TrimSpace(expr)
	fields := strings.Fields(expr)
	switch {
	case strings.HasPrefix(expr, "@"):
		if !descriptors[expr] {
			return Spec{}, errors.New("must be five fields or one of @hourly, @daily, @weekly, @monthly, @yearly")
		}
	case strings.Contains(expr, "="): // robfig's TZ= prefix: the zone is the schedule's timezone
		return Spec{}, errors.New("must not name a time zone (use timezone)")
	case len(fields) != 5:
		return Spec{}, fmt.Errorf("must have five fields (minute hour day-of-month month day-of-week), not %d", len(fields))
	}
	sched, err := parser.Parse(expr)
	if err != nil {
		return Spec{}, errors.New(err.Error())
	}
	s, ok := sched.(*cron.SpecSchedule)
	if !ok { // every expression the checks above let through is one
		return Spec{}, fmt.Errorf("is not a calendar schedule")
	}
	out := Spec{minute: s.Minute, hour: s.Hour, dom: s.Dom, month: s.Month, dow: s.Dow,
		domAny: s.Dom&starBit != 0, dowAny: s.Dow&starBit != 0}
	if len(fields) == 5 {
		out.domAny, out.dowAny = unrestricted(fields[2]), unrestricted(fields[4])
	}
	return out, nil
}

// unrestricted reports whether a day field leaves the day free: it begins
// with `*` or `?`, a step included (`*/2`), as standard cron reads it.
func unrestricted(field string) bool {
	return strings.HasPrefix(field, "*") || strings.HasPrefix(field, "?")
}

// horizon bounds the search for a next due time: an expression that never
// matches in it (February 30th) has none.
const horizon = 5 * 366

// Next is the first due time of s strictly after after, in loc; zero when
// there is none within five years.
func (s Spec) Next(after time.Time, loc *time.Location) time.Time {
	// Resolved instants never decrease as wall times grow, so a walk from
	// a wall time not later than after finds the first one past it. Three
	// hours before after's wall time is early enough for any zone's jump;
	// the earlier times of that day are passed over unresolved.
	local := after.In(loc)
	y, m, d := local.Date()
	floor := time.Date(y, m, d, local.Hour(), local.Minute(), 0, 0, time.UTC).Add(-3 * time.Hour)
	day := time.Date(floor.Year(), floor.Month(), floor.Day(), 0, 0, 0, 0, time.UTC) // a calendar day: UTC arithmetic has no jumps
	for range horizon {
		if s.dayMatches(day) {
			for h := range 24 {
				if s.hour&(1<<h) == 0 {
					continue
				}
				for mi := range 60 {
					if s.minute&(1<<mi) == 0 {
						continue
					}
					wall := day.Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute)
					if wall.Before(floor) {
						continue
					}
					if at := Resolve(wall, loc); at.After(after) {
						return at
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

// dayMatches reports whether the calendar day (in UTC) is one of s's.
func (s Spec) dayMatches(day time.Time) bool {
	if s.month&(1<<uint(day.Month())) == 0 {
		return false
	}
	dom, dow := s.dom&(1<<uint(day.Day())) != 0, s.dow&(1<<uint(day.Weekday())) != 0
	if s.domAny || s.dowAny {
		return dom && dow
	}
	return dom || dow
}

// Resolve is the instant of the wall-clock time wall (its fields read as
// if in UTC) in loc: the first of two when the clocks went back over it,
// and the instant the clocks jumped to when they jumped over it, which is
// the first minute after it that exists.
func Resolve(wall time.Time, loc *time.Location) time.Time {
	// No zone changes its offset twice within two days: the offsets a
	// day either side are the only candidates.
	before, after := offset(wall.Add(-24*time.Hour), loc), offset(wall.Add(24*time.Hour), loc)
	early, late := wall.Add(-before), wall.Add(-after)
	earlyOK, lateOK := offset(early, loc) == before, offset(late, loc) == after
	switch {
	case earlyOK && lateOK: // the same instant, or the clocks went back: the first
		if late.Before(early) {
			return late.In(loc)
		}
		return early.In(loc)
	case earlyOK:
		return early.In(loc)
	case lateOK:
		return late.In(loc)
	}
	// The clocks jumped over wall: early lies past the jump, in the zone
	// that begins with it.
	start, _ := early.In(loc).ZoneBounds()
	return start.In(loc)
}

// offset is loc's offset from UTC at instant t.
func offset(t time.Time, loc *time.Location) time.Duration {
	_, secs := t.In(loc).Zone()
	return time.Duration(secs) * time.Second
}

// Zone loads an IANA time zone by name; the binary embeds the database
// (time/tzdata), so every zone is known wherever it runs. Local is not a
// name a schedule may use: it would mean the server's zone.
func Zone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, errors.New("must be an IANA time zone name such as Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, errors.New("is not a known IANA time zone")
	}
	return loc, nil
}
