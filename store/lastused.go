package store

import (
	"context"
	"sync"
	"time"

	"gorm.io/gorm"
)

// useRecorder records the last use of API keys off the request path: at
// most one write per key every lastUsedEvery, in the background, best
// effort. Authentication must neither queue behind SQLite's single writer
// nor fail because the write did.
type useRecorder struct {
	db      *gorm.DB
	timeout time.Duration

	mu     sync.Mutex
	next   map[ctext]time.Time // key id → when its next write is due
	closed bool
	wg     sync.WaitGroup
}

// maxTrackedKeys bounds the memory of the recorder; past it, the map is
// dropped and rebuilt (a few keys then get one early write each).
const maxTrackedKeys = 100_000

func newUseRecorder(db *gorm.DB) *useRecorder {
	return &useRecorder{db: db, timeout: 5 * time.Second, next: map[ctext]time.Time{}}
}

// record notes that key was used at t, writing it unless the stored value
// or a write in this process is less than lastUsedEvery old.
func (u *useRecorder) record(key keyRow, t time.Time) {
	if key.LastUsedAt != nil && t.Sub(*key.LastUsedAt) < lastUsedEvery {
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closed || t.Before(u.next[key.ID]) {
		return
	}
	if len(u.next) >= maxTrackedKeys {
		u.next = map[ctext]time.Time{}
	}
	u.next[key.ID] = t.Add(lastUsedEvery)
	u.wg.Add(1)
	go u.write(key.ID, t)
}

// write stores one use; a failure is dropped (the next use after the
// interval tries again).
func (u *useRecorder) write(id ctext, t time.Time) {
	defer u.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), u.timeout)
	defer cancel()
	_ = u.db.WithContext(ctx).Model(&keyRow{}).Where("id = ?", id).Update("last_used_at", t).Error
}

// close stops new writes and waits for those under way.
func (u *useRecorder) close() {
	u.mu.Lock()
	u.closed = true
	u.mu.Unlock()
	u.wg.Wait()
}
