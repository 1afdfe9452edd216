package connect

import (
	"context"
	"sync"
)

// dispatcher runs a connection's jobs: the jobs of one chat one at a time,
// in order; different chats in parallel. At most max jobs wait or run at
// once; submit refuses the rest, and waitRoom waits until there is room.
type dispatcher struct {
	ctx   context.Context
	max   int
	freed chan struct{} // signalled when a job ends
	// after, when set, runs on a chat's goroutine each time a job has
	// left (its room is free again).
	after func(context.Context)

	mu     sync.Mutex
	queued int
	chats  map[string][]func(context.Context) // a key exists while its chat has a drainer
	closed bool
	wg     sync.WaitGroup
}

func newDispatcher(ctx context.Context, max int) *dispatcher {
	return &dispatcher{ctx: ctx, max: max, freed: make(chan struct{}, 1), chats: map[string][]func(context.Context){}}
}

// waitRoom waits until submit would accept a job and reports false when
// ctx ends first.
func (d *dispatcher) waitRoom(ctx context.Context) bool {
	for {
		d.mu.Lock()
		room := d.queued < d.max
		d.mu.Unlock()
		if room {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-d.freed:
		}
	}
}

// submit queues job for chat and reports whether it was accepted.
func (d *dispatcher) submit(chat string, job func(context.Context)) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed || d.queued >= d.max {
		return false
	}
	d.queued++
	q, running := d.chats[chat]
	d.chats[chat] = append(q, job)
	if !running {
		d.wg.Add(1)
		go d.drain(chat)
	}
	return true
}

// drain runs chat's jobs until its queue is empty. Jobs left when the
// context ends are skipped.
func (d *dispatcher) drain(chat string) {
	defer d.wg.Done()
	for {
		d.mu.Lock()
		q := d.chats[chat]
		if len(q) == 0 {
			delete(d.chats, chat)
			d.mu.Unlock()
			return
		}
		job := q[0]
		d.chats[chat] = q[1:]
		d.mu.Unlock()
		if d.ctx.Err() == nil {
			job(d.ctx)
		}
		d.mu.Lock()
		d.queued--
		d.mu.Unlock()
		select {
		case d.freed <- struct{}{}:
		default:
		}
		if d.after != nil {
			d.after(d.ctx)
		}
	}
}

// close refuses new jobs and waits for the running ones; the caller ends
// their context first when they should stop early.
func (d *dispatcher) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.wg.Wait()
}
