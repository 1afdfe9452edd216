package cronspec

import (
	"strings"
	"testing"
	"time"
)

// utc is an instant written in UTC.
func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := Zone(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestNextAcrossDaylightSaving follows expressions from a start, one due
// time after the other, across the clock changes of three zones: Berlin
// and New York (an hour, at different wall times) and Lord Howe (half an
// hour). Every due time is written in UTC.
func TestNextAcrossDaylightSaving(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, zone, expr, from string
		want                   []string
	}{
		// 29 March: 02:00 CET jumps to 03:00 CEST (01:00 UTC). 02:30 does
		// not exist that day: it fires at 03:00, the first minute that does.
		{"berlin spring, a skipped time", "Europe/Berlin", "30 2 * * *", "2026-03-27 12:00",
			[]string{"2026-03-28 01:30", "2026-03-29 01:00", "2026-03-30 00:30"}},
		// 25 October: 03:00 CEST goes back to 02:00 CET (01:00 UTC). 02:30
		// happens twice; it fires the first time only.
		{"berlin autumn, a repeated time", "Europe/Berlin", "30 2 * * *", "2026-10-24 12:00",
			[]string{"2026-10-25 00:30", "2026-10-26 01:30"}},
		{"berlin, a time far from the change keeps its wall time", "Europe/Berlin", "0 8 * * *", "2026-03-28 00:00",
			[]string{"2026-03-28 07:00", "2026-03-29 06:00", "2026-03-30 06:00"}},
		// Hourly through the repeated hour: 02:00 fires once, so the next
		// is 03:00 CET, two hours later.
		{"berlin autumn, hourly", "Europe/Berlin", "@hourly", "2026-10-24 23:30",
			[]string{"2026-10-25 00:00", "2026-10-25 02:00", "2026-10-25 03:00"}},
		// Minutely through the jump: 02:00 to 02:59 are all 03:00, once.
		{"berlin spring, minutely", "Europe/Berlin", "* * * * *", "2026-03-29 00:58",
			[]string{"2026-03-29 00:59", "2026-03-29 01:00", "2026-03-29 01:01"}},
		// 8 March: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
		{"new york spring, a skipped time", "America/New_York", "30 2 * * *", "2026-03-07 12:00",
			[]string{"2026-03-08 07:00", "2026-03-09 06:30"}},
		// 1 November: 02:00 EDT goes back to 01:00 EST (06:00 UTC); 01:30
		// happens twice.
		{"new york autumn, a repeated time", "America/New_York", "30 1 * * *", "2026-10-31 12:00",
			[]string{"2026-11-01 05:30", "2026-11-02 06:30"}},
		{"new york, weekdays at nine", "America/New_York", "0 9 * * 1-5", "2026-03-06 15:00",
			[]string{"2026-03-09 13:00", "2026-03-10 13:00"}},
		// 4 October: 02:00 LHST (+10:30) jumps to 02:30 LHDT (+11), 15:30
		// UTC the day before; 02:00 and 02:15 both fire at 02:30, once.
		{"lord howe spring, half an hour skipped", "Australia/Lord_Howe", "*/15 * * * *", "2026-10-03 15:10",
			[]string{"2026-10-03 15:15", "2026-10-03 15:30", "2026-10-03 15:45"}},
		{"lord howe spring, daily in the gap", "Australia/Lord_Howe", "15 2 * * *", "2026-10-02 00:00",
			[]string{"2026-10-02 15:45", "2026-10-03 15:30", "2026-10-04 15:15"}},
		// 5 April: 02:00 LHDT goes back to 01:30 LHST (15:00 UTC the day
		// before); 01:45 happens twice.
		{"lord howe autumn, a repeated time", "Australia/Lord_Howe", "45 1 * * *", "2026-04-03 00:00",
			[]string{"2026-04-03 14:45", "2026-04-04 14:45", "2026-04-05 15:15"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			spec, err := Parse(c.expr)
			if err != nil {
				t.Fatal(err)
			}
			loc := zone(t, c.zone)
			at := utc(c.from)
			for i, w := range c.want {
				next := spec.Next(at, loc)
				if !next.Equal(utc(w)) {
					t.Fatalf("due time %d after %s: %s (%s), want %s UTC", i+1, at.UTC().Format(time.DateTime),
						next.UTC().Format(time.DateTime), next.Format("15:04 MST"), w)
				}
				at = next
			}
		})
	}
}

// TestDayFields: with both day fields restricted a day matches either;
// with one of them `*` (a step included, as standard cron reads it) both
// must match.
func TestDayFields(t *testing.T) {
	t.Parallel()
	cases := []struct {
		expr, from string
		want       []string
	}{
		// April 2026: Fridays are the 3rd, 10th, 17th; the 13th is a Monday.
		{"0 9 13 * 5", "2026-04-11 00:00", []string{"2026-04-13 09:00", "2026-04-17 09:00"}},
		// Odd days that are Mondays: the 13th and the 27th.
		{"0 9 */2 * 1", "2026-04-01 00:00", []string{"2026-04-13 09:00", "2026-04-27 09:00"}},
		{"0 9 * * 0", "2026-04-01 00:00", []string{"2026-04-05 09:00", "2026-04-12 09:00"}},
		{"@weekly", "2026-04-01 00:00", []string{"2026-04-05 00:00", "2026-04-12 00:00"}},
		{"@daily", "2026-04-01 00:00", []string{"2026-04-02 00:00"}},
		{"@monthly", "2026-04-01 00:00", []string{"2026-05-01 00:00", "2026-06-01 00:00"}},
		{"@yearly", "2026-04-01 00:00", []string{"2027-01-01 00:00"}},
		{"0 0 29 2 *", "2026-04-01 00:00", []string{"2028-02-29 00:00"}},
		{"5,35 */6 * jan-mar mon-fri", "2026-04-01 00:00", []string{"2027-01-01 00:05", "2027-01-01 00:35", "2027-01-01 06:05"}},
	}
	for _, c := range cases {
		spec, err := Parse(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		at := utc(c.from)
		for _, w := range c.want {
			if at = spec.Next(at, time.UTC); !at.Equal(utc(w)) {
				t.Errorf("%s: %s, want %s", c.expr, at.Format(time.DateTime), w)
				break
			}
		}
	}
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"5-1 * * * *":        "beyond end of range",
		"* * * *":            "five fields",
		"0 * * * * *":        "five fields",
		"60 * * * *":         "above maximum",
		"@every 5m":          "one of @hourly",
		"@annually":          "one of @hourly",
		"TZ=UTC 0 * * * *":   "time zone",
		"0 9 * * someday":    "failed to parse",
		"":                   "five fields",
		"0 24 * * *":         "above maximum",
		"CRON_TZ=UTC @daily": "time zone",
	}
	for expr, want := range cases {
		if _, err := Parse(expr); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q): %v, want an error saying %q", expr, err, want)
		}
	}
	never, err := Parse("0 0 30 2 *")
	if err != nil {
		t.Fatal(err)
	}
	if next := never.Next(utc("2026-01-01 00:00"), time.UTC); !next.IsZero() {
		t.Errorf("February 30th fires at %s", next)
	}
}

func TestZone(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "Local", "Mars/Olympus", "../etc/passwd"} {
		if _, err := Zone(name); err == nil {
			t.Errorf("Zone(%q) accepted", name)
		}
	}
	if loc, err := Zone("Australia/Lord_Howe"); err != nil || loc.String() != "Australia/Lord_Howe" {
		t.Errorf("Lord Howe: %v %v", loc, err)
	}
}

func BenchmarkNextMinutely(b *testing.B) {
	spec, err := Parse("* * * * *")
	if err != nil {
		b.Fatal(err)
	}
	loc, err := Zone("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	at := utc("2026-10-24 23:59")
	for b.Loop() {
		spec.Next(at, loc)
	}
}
