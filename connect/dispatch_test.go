package connect

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/agentd/agentd/internal/testutil"
)

// recorder records the jobs that ran, in order.
type recorder struct {
	mu  sync.Mutex
	ran []string
}

func (r *recorder) job(name string, before func()) func(context.Context) {
	return func(context.Context) {
		if before != nil {
			before()
		}
		r.mu.Lock()
		r.ran = append(r.ran, name)
		r.mu.Unlock()
	}
}

func (r *recorder) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.ran)
}

func TestDispatcherRunsAChatInOrderOneAtATime(t *testing.T) {
	d := newDispatcher(context.Background(), 10)
	var rec recorder
	release := make(chan struct{})
	started := make(chan struct{})
	// The first job blocks: the chat's later jobs must wait for it, in
	// order, however the scheduler runs their goroutines.
	d.submit("a", rec.job("a1", func() { close(started); <-release }))
	<-started
	for _, name := range []string{"a2", "a3", "a4"} {
		if !d.submit("a", rec.job(name, nil)) {
			t.Fatalf("%s refused", name)
		}
	}
	if ran := rec.names(); len(ran) != 0 {
		t.Fatalf("ran %v while the chat's first job was running", ran)
	}
	close(release)
	d.close()
	if ran := rec.names(); !slices.Equal(ran, []string{"a1", "a2", "a3", "a4"}) {
		t.Fatalf("ran %v; want a1..a4 in order", ran)
	}
}

func TestDispatcherRunsChatsInParallel(t *testing.T) {
	d := newDispatcher(context.Background(), 10)
	var rec recorder
	release := make(chan struct{})
	d.submit("a", rec.job("a", func() { <-release }))
	// b runs while a blocks: were chats serialised, b would wait forever
	// and the test would time out.
	bDone := make(chan struct{})
	d.submit("b", func(context.Context) { close(bDone) })
	<-bDone
	close(release)
	d.close()
}

func TestDispatcherRefusesOverflowAndAfterClose(t *testing.T) {
	d := newDispatcher(context.Background(), 2)
	release := make(chan struct{})
	block := func(context.Context) { <-release }
	// Running and waiting jobs both count, across chats.
	if !d.submit("a", block) || !d.submit("b", block) {
		t.Fatal("jobs within the bound refused")
	}
	if d.submit("c", block) {
		t.Fatal("a third job accepted by a dispatcher of two")
	}
	close(release)
	d.close()
	if d.submit("a", block) {
		t.Fatal("a job accepted after close")
	}
}

func TestDispatcherFreesSlotsAsJobsFinish(t *testing.T) {
	d := newDispatcher(context.Background(), 1)
	defer d.close()
	for range 3 {
		done := make(chan struct{})
		job := func(context.Context) { close(done) }
		// The slot is freed just after the previous job returned.
		testutil.Eventually(t, "a slot", func() error {
			if !d.submit("a", job) {
				return errors.New("the job refused")
			}
			return nil
		})
		<-done
	}
}

func TestDispatcherSkipsJobsAfterItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := newDispatcher(ctx, 10)
	var rec recorder
	started := make(chan struct{})
	d.submit("a", rec.job("a1", func() { close(started); <-ctx.Done() }))
	<-started
	d.submit("a", rec.job("a2", nil))
	cancel()
	d.close()
	if ran := rec.names(); !slices.Equal(ran, []string{"a1"}) {
		t.Fatalf("ran %v; want only the job that was running", ran)
	}
}
