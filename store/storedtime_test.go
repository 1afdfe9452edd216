package store

import (
	"math/rand/v2"
	"testing"
	"time"
)

// A timestamp scanned from its text (CAST AS TEXT) reads as the driver
// reads the column declared datetime: the same instant, in the same
// location (so that a page start binds back to the same text), for the
// text the store writes and for anything else a column could hold.
func TestStoredTimeReadsAsTheDriver(t *testing.T) {
	s := newSQLite(t)
	db, err := s.w.DB()
	mustOK(t, err)
	if _, err := db.Exec(`CREATE TABLE times (n integer, v datetime)`); err != nil {
		t.Fatal(err)
	}
	plus2 := time.FixedZone("", 2*3600)
	values := []any{
		time.Date(2026, 11, 28, 14, 5, 1, 123_000_000, time.UTC),
		time.Date(2026, 11, 28, 14, 5, 1, 0, time.UTC),
		time.Date(2026, 11, 28, 14, 5, 1, 100_000_000, time.UTC),
		time.Date(2026, 11, 28, 14, 5, 1, 123_456_789, time.UTC),
		time.Date(2026, 11, 28, 14, 5, 1, 1, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2000, 2, 29, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 4, 30, 12, 0, 0, 0, time.UTC),
		time.Date(2026, 11, 28, 14, 5, 1, 123_000_000, plus2),
		"2026-11-28 14:05:01.123+00:00",
		"2026-11-28 14:05:01.1234567891+00:00",
		"2026-11-28 14:05:01.+00:00",
		"2026-11-28 14:05:01,5+00:00",
		"2026-11-28 14:05:01.123-05:30",
		"2026-11-28T14:05:01.123Z",
		"2026-11-28T14:05:01.123+00:00",
		"2026-11-28 14:05:01.123",
		"2026-11-28 14:05:01",
		"2026-11-28 14:05",
		"2026-11-28",
		"2026-02-29 10:00:00+00:00",
		"1900-02-29 10:00:00+00:00",
		"2026-04-31 10:00:00+00:00",
		"2026-13-01 10:00:00+00:00",
		"2026-00-01 10:00:00+00:00",
		"2026-11-00 10:00:00+00:00",
		"2026-11-28 24:00:00+00:00",
		"2026-11-28 14:60:00+00:00",
		"2026-11-28 14:05:60+00:00",
		"2026-11-28 4:05:01+00:00",
		"0000-01-01 00:00:00+00:00",
		"2026-11-28 14:05:01.123+00:00 ",
		"202a-11-28 14:05:01+00:00",
		"not a time",
		"",
		int64(1_764_338_701),
		int64(1_764_338_701_123),
		int64(-2_000_000_000_000),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		precision := []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second}[rng.IntN(4)]
		values = append(values, time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9)).UTC().Truncate(precision))
	}
	for i, v := range values {
		if _, err := db.Exec(`INSERT INTO times VALUES (?, ?)`, i, v); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := db.Query(`SELECT n, v, CAST(v AS TEXT) FROM times ORDER BY n`)
	mustOK(t, err)
	defer rows.Close()
	const layout = "2006-01-02 15:04:05.999999999-07:00"
	fast := 0
	for rows.Next() {
		var (
			n      int
			driver time.Time
			text   storedTime
		)
		mustOK(t, rows.Scan(&n, &driver, &text))
		if !text.Valid || !text.Time.Equal(driver) || text.Time.Format(layout) != driver.Format(layout) {
			t.Errorf("%#v: read %v from its text, the driver %v", values[n], text.Time, driver)
		}
		if _, ok := values[n].(time.Time); ok && driver.Location() == time.UTC {
			fast++
		}
	}
	mustOK(t, rows.Err())
	if fast < 500 {
		t.Errorf("only %d of the times were UTC", fast)
	}
	var null storedTime
	mustOK(t, db.QueryRow(`SELECT CAST(NULL AS TEXT)`).Scan(&null))
	if null.Valid {
		t.Errorf("NULL read as %v", null.Time)
	}
}

// The store's layout is read without the general parse.
func TestParseUTCText(t *testing.T) {
	for s, want := range map[string]time.Time{
		"2026-11-28 14:05:01.123+00:00":       time.Date(2026, 11, 28, 14, 5, 1, 123_000_000, time.UTC),
		"2026-11-28 14:05:01+00:00":           time.Date(2026, 11, 28, 14, 5, 1, 0, time.UTC),
		"2026-11-28 14:05:01.5+00:00":         time.Date(2026, 11, 28, 14, 5, 1, 500_000_000, time.UTC),
		"2024-02-29 00:00:00.123456789+00:00": time.Date(2024, 2, 29, 0, 0, 0, 123_456_789, time.UTC),
	} {
		got, ok := parseUTCText(s)
		if !ok || !got.Equal(want) || got.Location() != time.UTC {
			t.Errorf("%s: %v %v, want %v", s, got, ok, want)
		}
	}
	for _, s := range []string{"2026-11-28 14:05:01.123Z", "2026-02-29 00:00:00+00:00", "2026-11-28 14:05:01.+00:00", "2026-11-28T14:05:01+00:00"} {
		if got, ok := parseUTCText(s); ok {
			t.Errorf("%s: read %v", s, got)
		}
	}
}

func BenchmarkParseStoredTime(b *testing.B) {
	for _, tc := range []struct{ name, text string }{
		{"fixed", "2026-11-28 14:05:01.123+00:00"},
		{"general", "2026-11-28T14:05:01.123Z"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				parseStoredTime(tc.text)
			}
		})
	}
}
