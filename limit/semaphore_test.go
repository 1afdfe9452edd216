package limit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// semaphoreBackend builds semaphores of one backend sharing state within a
// test (Redis: same prefix, new client each).
type semaphoreBackend struct {
	name string
	new  func(t *testing.T) func() Semaphore
}

var semaphoreBackends = []semaphoreBackend{
	{"memory", func(t *testing.T) func() Semaphore {
		s := NewMemorySemaphore()
		return func() Semaphore { return s }
	}},
	{"redis", func(t *testing.T) func() Semaphore {
		prefix := testPrefix(t, newRedisClient(t))
		return func() Semaphore { return NewRedisSemaphore(newRedisClient(t), prefix, time.Second) }
	}},
}

func forEachSemaphore(t *testing.T, f func(t *testing.T, newSem func() Semaphore)) {
	for _, b := range semaphoreBackends {
		t.Run(b.name, func(t *testing.T) { f(t, b.new(t)) })
	}
}

func acquire(t *testing.T, s Semaphore, key string, size int) (func(), bool) {
	t.Helper()
	release, ok, err := s.TryAcquire(context.Background(), key, size)
	if err != nil {
		t.Fatalf("TryAcquire(%q, %d): %v", key, size, err)
	}
	if release == nil {
		t.Fatal("nil release")
	}
	return release, ok
}

func TestSemaphoreConcurrentAcquire(t *testing.T) {
	forEachSemaphore(t, func(t *testing.T, newSem func() Semaphore) {
		sems := []Semaphore{newSem(), newSem()} // two replicas
		const size, callers = 10, 12
		var (
			mu       sync.Mutex
			releases []func()
			wg       sync.WaitGroup
		)
		for i := range callers {
			wg.Go(func() {
				release, ok, err := sems[i%2].TryAcquire(context.Background(), "agent", size)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					releases = append(releases, release)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(releases) != size {
			t.Fatalf("%d of %d acquired, want %d", len(releases), callers, size)
		}
		if _, ok := acquire(t, sems[0], "agent", size); ok {
			t.Fatal("acquired beyond the cap")
		}
		if release, ok := acquire(t, sems[1], "other", size); !ok {
			t.Fatal("another key is blocked")
		} else {
			release()
		}
		releases[0]()
		releases[0]() // idempotent: frees one slot only
		again, ok := acquire(t, sems[1], "agent", size)
		if !ok {
			t.Fatal("release did not free a slot")
		}
		extra, ok := acquire(t, sems[0], "agent", size)
		extra()
		if ok {
			t.Error("a second release freed a second slot")
		}
		again()
		for _, release := range releases[1:] {
			release()
		}
	})
}

func TestSemaphoreZeroSize(t *testing.T) {
	forEachSemaphore(t, func(t *testing.T, newSem func() Semaphore) {
		if release, ok := acquire(t, newSem(), "k", 0); ok {
			t.Error("acquired with size 0")
		} else {
			release() // a no-op, not nil
		}
	})
}

func TestMemorySemaphoreForgetsFreeKeys(t *testing.T) {
	s := NewMemorySemaphore().(*memorySemaphore)
	r1, _ := acquire(t, s, "a", 2)
	r2, _ := acquire(t, s, "a", 2)
	r3, _ := acquire(t, s, "b", 2)
	r1()
	r2()
	r3()
	r3()
	if len(s.held) != 0 {
		t.Errorf("held = %v after every release, want empty", s.held)
	}
}

func TestRedisSemaphoreReleaseDeletesKey(t *testing.T) {
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	s := NewRedisSemaphore(client, prefix, time.Second)
	release, ok := acquire(t, s, "k", 1)
	if !ok {
		t.Fatal("not acquired")
	}
	ttl, err := client.PTTL(context.Background(), prefix+"sem:k").Result()
	if err != nil || ttl <= 0 || ttl > time.Second {
		t.Errorf("ttl %v, %v; want within the lease", ttl, err)
	}
	release()
	if n, err := client.Exists(context.Background(), prefix+"sem:k").Result(); err != nil || n != 0 {
		t.Errorf("key still exists (%d, %v) after the last release", n, err)
	}
}

func TestRedisSemaphoreDeadHolderFreesSlot(t *testing.T) {
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	const lease = 300 * time.Millisecond
	dead := NewRedisSemaphore(client, prefix, lease, withoutRefresh())
	live := NewRedisSemaphore(newRedisClient(t), prefix, lease)
	if _, ok := acquire(t, dead, "k", 1); !ok { // never released
		t.Fatal("not acquired")
	}
	if _, ok := acquire(t, live, "k", 1); ok {
		t.Fatal("acquired while the dead holder's lease runs")
	}
	time.Sleep(lease + 50*time.Millisecond)
	release, ok := acquire(t, live, "k", 1)
	if !ok {
		t.Fatal("the dead holder's slot was not freed after its lease")
	}
	release()
}

func TestRedisSemaphoreRefreshKeepsLongHolder(t *testing.T) {
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	const lease = 150 * time.Millisecond
	s := NewRedisSemaphore(client, prefix, lease)
	release, ok := acquire(t, s, "k", 1)
	if !ok {
		t.Fatal("not acquired")
	}
	time.Sleep(5 * lease)
	if _, ok := acquire(t, s, "k", 1); ok {
		t.Fatal("a live holder lost its slot")
	}
	release()
	release2, ok := acquire(t, s, "k", 1)
	if !ok {
		t.Fatal("release did not free the slot")
	}
	release2()
}

func TestRedisSemaphoreReleaseAfterContextCancel(t *testing.T) {
	client := newRedisClient(t)
	prefix := testPrefix(t, client)
	s := NewRedisSemaphore(client, prefix, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	release, ok, err := s.TryAcquire(ctx, "k", 1)
	if err != nil || !ok {
		t.Fatalf("TryAcquire: %v, %v", ok, err)
	}
	cancel() // the request ended; release must still work
	release()
	if r, ok := acquire(t, s, "k", 1); !ok {
		t.Fatal("slot not freed")
	} else {
		r()
	}
}

func TestRedisSemaphoreConcurrentReleases(t *testing.T) {
	client := newRedisClient(t)
	s := NewRedisSemaphore(client, testPrefix(t, client), time.Second)
	release, _ := acquire(t, s, "k", 1)
	var calls atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { release(); calls.Add(1) })
	}
	wg.Wait()
	if calls.Load() != 8 {
		t.Fatal("a release did not return")
	}
}
