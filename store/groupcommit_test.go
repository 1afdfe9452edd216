package store

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// TestGroupedExchangesFailAlone: exchanges saved at once on SQLite share
// transactions, and one that fails (another account's agent) rolls back
// alone: every other is stored and counted, and each caller hears its own
// outcome.
func TestGroupedExchangesFailAlone(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	acct := mustAccount(t, s, "acme")
	other := mustAccount(t, s, "other")
	a := mustAgent(t, s, acct.ID, "busy")
	const n = 40
	errs := together(n, func(i int) error {
		owner := acct.ID
		if i == n/2 {
			owner = other.ID
		}
		_, _, err := s.Conversations().SaveExchange(ctx, owner, a.ID, ref("user:u"), domain.Message{Text: "q"}, domain.Message{Text: "r"})
		return err
	})
	for i, err := range errs {
		if i == n/2 {
			wantErr(t, err, domain.ErrNotFound)
		} else if err != nil {
			t.Errorf("exchange %d: %v", i, err)
		}
	}
	if got := mustGet(t, s, acct.ID, a.ID); got.Metrics.TotalMessages != n-1 {
		t.Errorf("%d messages counted, want %d", got.Metrics.TotalMessages, n-1)
	}
	if h, _ := s.Conversations().History(ctx, acct.ID, a.ID, ref("user:u"), 2*n); len(h) != 2*(n-1) {
		t.Errorf("history holds %d messages, want %d", len(h), 2*(n-1))
	}
}

// TestWritesQueuedDuringACommitShareTheNext: the writes that come while a
// transaction runs go into the next one together (all of them, unless the
// scheduler holds a sender back past the commit).
func TestWritesQueuedDuringACommitShareTheNext(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	const n = 10
	txs := make([]gorm.ConnPool, n)
	whileCommitting(t, s, n, func(i int) {
		mustOK(t, s.group.write(ctx, func(tx *gorm.DB) error { txs[i] = tx.Statement.ConnPool; return nil }))
	})
	wantTogether(t, txs)
}

// TestCreatesAndUpdatesShareCommits: on SQLite, creates and updates of
// agents that come at once go through the grouped writer, as exchanges do.
func TestCreatesAndUpdatesShareCommits(t *testing.T) {
	s := newSQLite(t)
	ctx := context.Background()
	acct := mustAccount(t, s, "acme")
	const n = 10
	agents := make([]domain.Agent, n)
	for i := range agents {
		agents[i] = mustAgent(t, s, acct.ID, "a")
	}
	var mu sync.Mutex
	var txs []gorm.ConnPool
	// The statements that write agents are written out: they run as raw
	// statements, known by their SQL.
	note := func(db *gorm.DB) {
		sql := db.Statement.SQL.String()
		if strings.HasPrefix(sql, "INSERT INTO agents ") || strings.HasPrefix(sql, "UPDATE agents ") {
			mu.Lock()
			defer mu.Unlock()
			txs = append(txs, db.Statement.ConnPool)
		}
	}
	mustOK(t, s.w.Callback().Raw().After("gorm:raw").Register("test:note_tx", note))
	whileCommitting(t, s, 2*n, func(i int) {
		if i < n {
			_, err := s.Agents().CreateAgent(ctx, domain.Agent{AccountID: acct.ID, Fields: fields(t, "name", "new")}, -1)
			mustOK(t, err)
			return
		}
		a := agents[i-n]
		_, _, err := s.Agents().UpdateAgent(ctx, acct.ID, a.ID, fields(t, "bio", []string{"changed"}), nil, domain.AnyVersion)
		mustOK(t, err)
	})
	if len(txs) != 2*n {
		t.Fatalf("%d writes of agents noted, want %d", len(txs), 2*n)
	}
	wantTogether(t, txs)
}

// whileCommitting runs write(i) for i in [0, n) at once while the grouped
// writer holds a transaction, and returns once they all returned: the
// writes queue during that commit, and the next transaction takes them.
func whileCommitting(t *testing.T, s *Store, n int, write func(i int)) {
	t.Helper()
	running, release := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.group.write(context.Background(), func(*gorm.DB) error { close(running); <-release; return nil })
	}()
	<-running
	var wg sync.WaitGroup
	var queued atomic.Int64
	for i := range n {
		wg.Go(func() {
			queued.Add(1)
			write(i)
		})
	}
	for queued.Load() < int64(n) {
		runtime.Gosched()
	}
	time.Sleep(50 * time.Millisecond) // the senders reach the queue; a late one only makes one more transaction
	close(release)
	wg.Wait()
}

// wantTogether fails unless the writes that ran in txs shared transactions
// (at most half as many as writes).
func wantTogether(t *testing.T, txs []gorm.ConnPool) {
	t.Helper()
	distinct := map[gorm.ConnPool]bool{}
	for _, tx := range txs {
		distinct[tx] = true
	}
	if len(distinct) > len(txs)/2 {
		t.Errorf("the %d queued writes ran in %d transactions, want them together", len(txs), len(distinct))
	}
}

// TestGroupedWriteAfterClose is refused, never left waiting.
func TestGroupedWriteAfterClose(t *testing.T) {
	s := newSQLite(t)
	g := newGroupCommit(s.w)
	g.close()
	if err := g.write(context.Background(), func(*gorm.DB) error { return nil }); !errors.Is(err, errClosed) {
		t.Errorf("write after close: %v", err)
	}
}
