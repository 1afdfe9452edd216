package store

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// sqliteTimeFormats are the layouts mattn/go-sqlite3 tries, in its order,
// on the text of a column declared datetime, timestamp or date
// (SQLiteTimestampFormats); it writes a time.Time with the first.
var sqliteTimeFormats = []string{
	"2006-01-02 15:04:05.999999999-07:00",
	"2006-01-02T15:04:05.999999999-07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04:05",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// storedTime is a timestamp column scanned without the driver's help
// where it would be slow: on SQLite a query selects the column as
// CAST(column AS TEXT), which drops its declared type, so the driver hands
// over the stored text instead of trying its layouts one after the other
// with time.ParseInLocation, and Scan reads the one layout the store
// writes with a fixed-position parser (parseStoredTime). On PostgreSQL the
// driver's time.Time is taken as it is. Valid is false for NULL.
type storedTime struct {
	Time  time.Time
	Valid bool
}

// Scan reads a timestamp as the database/sql driver gives it.
func (st *storedTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		st.Time, st.Valid = time.Time{}, false
	case time.Time:
		st.Time, st.Valid = v, true
	case string:
		st.Time, st.Valid = parseStoredTime(v), true
	case []byte:
		st.Time, st.Valid = parseStoredTime(string(v)), true
	case int64:
		st.Time, st.Valid = sqliteUnixTime(v), true
	default:
		return fmt.Errorf("store: a timestamp column holds a %T", src)
	}
	return nil
}

// parseStoredTime reads the text of a SQLite timestamp column as the
// driver would have read it had the column kept its declared type (see
// sqliteTime), quickly for the layout the driver writes a UTC time in:
// "2006-01-02 15:04:05.999999999+00:00" (the fraction optional, of 1 to 9
// digits).
func parseStoredTime(s string) time.Time {
	if t, ok := parseUTCText(s); ok {
		return t
	}
	return sqliteTime(s)
}

// parseUTCText parses "YYYY-MM-DD hh:mm:ss[.f{1,9}]+00:00" as
// time.ParseInLocation(sqliteTimeFormats[0], s, time.UTC) does, and
// reports false for any other text, including dates and times out of
// range, which the general parse then answers.
func parseUTCText(s string) (time.Time, bool) {
	const fixed = len("2006-01-02 15:04:05")
	n := len(s)
	if n < fixed+len("+00:00") || s[n-6:] != "+00:00" ||
		s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	hour, ok4 := digits(s[11:13])
	minute, ok5 := digits(s[14:16])
	sec, ok6 := digits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || day > daysIn(time.Month(month), year) ||
		hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if frac := s[fixed : n-6]; frac != "" {
		if len(frac) < 2 || len(frac) > 10 || frac[0] != '.' {
			return time.Time{}, false
		}
		f, ok := digits(frac[1:])
		if !ok {
			return time.Time{}, false
		}
		for range 10 - len(frac) {
			f *= 10
		}
		nsec = f
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits is the value of s, which must be decimal digits only.
func digits(s string) (int, bool) {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// daysIn is the number of days of month in year.
func daysIn(month time.Month, year int) int {
	if month == time.February {
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	}
	return 31 - int((month-1)%7%2)
}

// sqliteTime reads the text of a SQLite timestamp column as
// mattn/go-sqlite3 reads one declared datetime: an integer as Unix seconds
// or, beyond 1e12 either way, milliseconds (CAST makes an INTEGER value
// text of digits; text of digits alone is never stored as text in a
// column of numeric affinity), else without a trailing "Z", by the first
// of sqliteTimeFormats that parses it, in UTC when it names no offset; the
// zero time when none does. (The driver would then move the time into
// the location of the DSN's _loc, which the store does not set; its
// readers take the UTC of every time anyway.)
func sqliteTime(s string) time.Time {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		return sqliteUnixTime(v)
	}
	s = strings.TrimSuffix(s, "Z")
	for _, layout := range sqliteTimeFormats {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t
		}
	}
	return time.Time{}
}

// sqliteUnixTime is an INTEGER timestamp as mattn/go-sqlite3 reads it.
func sqliteUnixTime(v int64) time.Time {
	if v > 1e12 || v < -1e12 {
		return time.Unix(0, v*int64(time.Millisecond)).UTC()
	}
	return time.Unix(v, 0).UTC()
}
