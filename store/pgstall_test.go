package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentd/agentd/store/storetest/pgtest"
	"gorm.io/gorm"
)

// TestPostgresReadNeverStallsTheTransactions checks that a read waiting
// for a connection cannot stall the transactions holding them. With
// statements prepared on the pool (GORM's PrepareStmt mode) it did, for
// good: a read met a query first and prepared it on the pool, which
// waits for a free connection; a transaction then met the same query and
// waited for that preparation, holding its connection. Under 64 messages
// at once every connection of the pool ended so, and agentd answered
// nothing more.
func TestPostgresReadNeverStallsTheTransactions(t *testing.T) {
	s, err := Open(context.Background(), pgtest.DSN(t), WithPool(Pool{MaxOpen: 1, MaxIdle: 1}))
	if err != nil {
		t.Fatalf("open postgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const query = "SELECT count(*) FROM accounts WHERE name <> 'a query no one ran before'"
	began, readDone := make(chan struct{}), make(chan error, 1)
	go func() {
		<-began
		var n int64
		readDone <- s.read(ctx).Raw(query).Scan(&n).Error
	}()
	err = s.write(ctx, "stall", func(tx *gorm.DB) error {
		close(began)
		time.Sleep(200 * time.Millisecond) // the read is waiting for the connection this transaction holds
		var n int64
		return tx.Raw(query).Scan(&n).Error
	})
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the transaction stalled behind the read: %v", err)
	}
	if err != nil {
		t.Fatalf("transaction: %v", err)
	}
	if err := <-readDone; err != nil {
		t.Fatalf("read: %v", err)
	}
}
