// Package streamlogtest helps test what runs on streamlog: a Backend
// whose replica can be made to die.
package streamlogtest

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/agentd/agentd/streamlog"
)

// Dying is a Backend whose replica dies when Kill is called: from then on
// its writes, heartbeats and reads of cancels fail, as nothing more comes
// from a replica killed with SIGKILL. Its reads still work, so the dead
// replica's own followers are left alone.
type Dying struct {
	streamlog.Backend
	dead atomic.Bool
}

var _ streamlog.Backend = (*Dying)(nil)

// ErrDead is what a dead replica's calls fail with.
var ErrDead = errors.New("streamlogtest: the replica is dead")

// Kill makes the replica dead.
func (d *Dying) Kill() { d.dead.Store(true) }

// AppendStreams fails once the replica is dead.
func (d *Dying) AppendStreams(ctx context.Context, batches []streamlog.Batch) error {
	if d.dead.Load() {
		return ErrDead
	}
	return d.Backend.AppendStreams(ctx, batches)
}

// KeepStreams fails once the replica is dead.
func (d *Dying) KeepStreams(ctx context.Context, owner string, ids []string) error {
	if d.dead.Load() {
		return ErrDead
	}
	return d.Backend.KeepStreams(ctx, owner, ids)
}

// TakeStreamCancels fails once the replica is dead.
func (d *Dying) TakeStreamCancels(ctx context.Context, owner string) ([]string, error) {
	if d.dead.Load() {
		return nil, ErrDead
	}
	return d.Backend.TakeStreamCancels(ctx, owner)
}
