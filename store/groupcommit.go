package store

import (
	"context"
	"errors"
	"sync"

	"gorm.io/gorm"
)

// groupCommitMax bounds the writes one grouped transaction holds.
const groupCommitMax = 64

// errClosed is the answer to a grouped write queued after Close.
var errClosed = errors.New("store: closed")

// groupCommit writes the exchanges of concurrent turns together on SQLite.
// Its single writer commits one transaction at a time, and each commit
// waits for the disk: the writes that queue while one commits go into the
// next transaction together (one that fails is rolled back alone, see
// commit), and each caller is answered only after the commit that holds
// its write. Nothing is acknowledged that a crash can
// lose. On PostgreSQL writes stay concurrent and no groupCommit runs.
type groupCommit struct {
	db    *gorm.DB
	queue chan *groupedWrite
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

// groupedWrite is one caller's write waiting for its transaction.
type groupedWrite struct {
	ctx context.Context
	fn  func(tx *gorm.DB) error
	err chan error // its outcome, once committed or rolled back
}

func newGroupCommit(db *gorm.DB) *groupCommit {
	g := &groupCommit{db: db, queue: make(chan *groupedWrite), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// write runs fn in the next grouped transaction and returns its outcome
// after that transaction ends. Once queued, the write is waited for even
// when ctx ends: it may already be committed.
func (g *groupCommit) write(ctx context.Context, fn func(tx *gorm.DB) error) error {
	w := &groupedWrite{ctx: ctx, fn: fn, err: make(chan error, 1)}
	select {
	case g.queue <- w:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.stop:
		return errClosed
	}
	return <-w.err
}

// close stops the writer once the transaction in hand ends; it is
// idempotent, as Store.Close is.
func (g *groupCommit) close() {
	g.once.Do(func() { close(g.stop) })
	<-g.done
}

func (g *groupCommit) run() {
	defer close(g.done)
	for {
		var batch []*groupedWrite
		select {
		case w := <-g.queue:
			batch = append(batch, w)
		case <-g.stop:
			return
		}
	more:
		for len(batch) < groupCommitMax {
			select {
			case w := <-g.queue:
				batch = append(batch, w)
			default:
				break more
			}
		}
		g.commit(batch)
	}
}

// commit writes batch in one transaction and answers each write. When a
// write fails the transaction is rolled back and each write of the batch
// is run again in a transaction of its own, so it fails alone: failures
// are rare (an agent deleted during its turn), savepoints around every
// write would cost each two statements. A write whose caller has gone
// before it ran is skipped. Statements run without the callers'
// cancellation: interrupting one would roll back the whole transaction,
// the other callers' writes with it.
func (g *groupCommit) commit(batch []*groupedWrite) {
	errs := make([]error, len(batch))
	err := g.db.Transaction(func(tx *gorm.DB) error {
		for i, w := range batch {
			if errs[i] = w.ctx.Err(); errs[i] != nil {
				continue
			}
			if errs[i] = w.fn(tx.WithContext(context.WithoutCancel(w.ctx))); errs[i] != nil {
				return errs[i]
			}
		}
		return nil
	})
	if err != nil && len(batch) > 1 {
		for i, w := range batch {
			if errs[i] = w.ctx.Err(); errs[i] == nil {
				errs[i] = g.db.WithContext(context.WithoutCancel(w.ctx)).Transaction(w.fn)
			}
		}
	} else if err != nil {
		errs[0] = err
	}
	for i, w := range batch {
		w.err <- errs[i]
	}
}
