package store

import (
	"net/url"
	"strconv"
	"time"
)

// Pool sizes the PostgreSQL connection pool of one replica. SQLite keeps its
// own shape (one writer, a read pool) whatever Pool says.
type Pool struct {
	// MaxOpen bounds the connections to the database; with N replicas the
	// server must allow N × MaxOpen (plus the CLI's few).
	MaxOpen int
	// MaxIdle connections are kept open between bursts.
	MaxIdle int
	// MaxLifetime recycles a connection after this long (0: never), so a
	// failover or a PgBouncer restart is followed within that time.
	MaxLifetime time.Duration
	// MaxIdleTime closes a connection idle this long (0: never).
	MaxIdleTime time.Duration
	// StatementTimeout makes PostgreSQL cancel a statement running longer
	// (0: no limit), so a stuck query cannot hold a connection forever.
	StatementTimeout time.Duration
}

// DefaultPool is the pool of a replica when nothing is configured.
var DefaultPool = Pool{MaxOpen: 20, MaxIdle: 10, MaxLifetime: 30 * time.Minute, MaxIdleTime: 5 * time.Minute,
	StatementTimeout: 30 * time.Second}

// WithPool sizes the PostgreSQL pool.
func WithPool(p Pool) Option {
	return func(s *Store) { s.pool = p }
}

// withStatementTimeout adds PostgreSQL's statement_timeout to a postgres://
// URL unless the URL sets one; pgx sends it as a run-time parameter of
// every connection.
func withStatementTimeout(dsn string, d time.Duration) string {
	if d <= 0 {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn // gorm.Open reports the bad URL
	}
	q := u.Query()
	if q.Get("statement_timeout") == "" {
		q.Set("statement_timeout", strconv.FormatInt(d.Milliseconds(), 10))
		u.RawQuery = q.Encode()
	}
	return u.String()
}
