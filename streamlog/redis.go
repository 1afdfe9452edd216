package streamlog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis keeps streams in Redis, under keys that start with its prefix: a
// hash per stream ("<prefix>stream:<message id>": whose it is, its owner,
// how it ended, its heartbeat: the owner's clock in Unix milliseconds when
// it last renewed the stream), a list of its events' JSON ("...:events", event n at index
// n-1) and a set of the cancels sent to each replica
// ("<prefix>stream-cancels:<owner>"). Keys expire StaleAfter after the
// stream started, Retention after it ended.
type Redis struct {
	client redis.UniversalClient
	prefix string
}

var _ Backend = (*Redis)(nil)

// NewRedis returns a Backend over client whose keys start with prefix.
func NewRedis(client redis.UniversalClient, prefix string) *Redis {
	return &Redis{client: client, prefix: prefix}
}

func (r *Redis) metaKey(id string) string   { return r.prefix + "stream:" + id }
func (r *Redis) eventsKey(id string) string { return r.prefix + "stream:" + id + ":events" }
func (r *Redis) cancelsKey(owner string) string {
	return r.prefix + "stream-cancels:" + owner
}

// AppendStreams writes the batches in one pipeline.
func (r *Redis) AppendStreams(ctx context.Context, batches []Batch) error {
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, b := range batches {
			meta, events := r.metaKey(b.MessageID), r.eventsKey(b.MessageID)
			ttl := StaleAfter
			if len(b.Events) > 0 && b.Events[0].ID == 1 {
				p.HSet(ctx, meta, "account", b.AccountID, "agent", b.AgentID, "owner", b.Owner, "done", 0, "partial", 0,
					"beat", time.Now().UnixMilli())
			}
			if len(b.Events) > 0 {
				data := make([]any, len(b.Events))
				for i, e := range b.Events {
					data[i] = e.Data
				}
				p.RPush(ctx, events, data...)
			}
			if b.End.Done {
				p.HSet(ctx, meta, "done", 1, "partial", flag(b.End.Partial))
				ttl = Retention
			}
			p.Expire(ctx, meta, ttl)
			p.Expire(ctx, events, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("streamlog: append to redis: %w", err)
	}
	return nil
}

// ReadStream reads the stream's hash and its events after after.
func (r *Redis) ReadStream(ctx context.Context, k Key, after int) ([]Event, State, error) {
	var meta *redis.MapStringStringCmd
	var data *redis.StringSliceCmd
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		meta = p.HGetAll(ctx, r.metaKey(k.MessageID))
		data = p.LRange(ctx, r.eventsKey(k.MessageID), int64(after), -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, State{}, fmt.Errorf("streamlog: read from redis: %w", err)
	}
	st, _, err := r.state(k, meta.Val())
	if err != nil {
		return nil, State{}, err
	}
	events := make([]Event, len(data.Val()))
	for i, d := range data.Val() {
		events[i] = Event{ID: after + i + 1, Data: []byte(d)}
	}
	return events, st, nil
}

// state reads a stream's hash: its State and owner, ErrNotFound when it
// is missing or not k's.
func (r *Redis) state(k Key, meta map[string]string) (State, string, error) {
	if meta["account"] != k.AccountID || meta["agent"] != k.AgentID || meta["account"] == "" {
		return State{}, "", ErrNotFound
	}
	return State{Done: meta["done"] == "1", Partial: meta["partial"] == "1", Lost: meta["lost"] == "1"}, meta["owner"], nil
}

// RequestStreamCancel adds the stream to its owner's cancels unless it is
// done.
func (r *Redis) RequestStreamCancel(ctx context.Context, k Key) (State, error) {
	meta, err := r.client.HGetAll(ctx, r.metaKey(k.MessageID)).Result()
	if err != nil {
		return State{}, fmt.Errorf("streamlog: read from redis: %w", err)
	}
	st, owner, err := r.state(k, meta)
	if err != nil || st.Done {
		return st, err
	}
	key := r.cancelsKey(owner)
	_, err = r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, key, k.MessageID)
		p.Expire(ctx, key, time.Minute)
		return nil
	})
	if err != nil {
		return State{}, fmt.Errorf("streamlog: cancel in redis: %w", err)
	}
	return st, nil
}

// TakeStreamCancels pops owner's cancels.
func (r *Redis) TakeStreamCancels(ctx context.Context, owner string) ([]string, error) {
	ids, err := r.client.SPopN(ctx, r.cancelsKey(owner), 1000).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("streamlog: read cancels from redis: %w", err)
	}
	return ids, nil
}

// keepScript renews a stream's heartbeat (ARGV[1]) while its owner is
// ARGV[2]; a hash gone is left gone (one written with the heartbeat alone
// would never expire).
const keepScript = `if redis.call('HGET', KEYS[1], 'owner') == ARGV[2] then
  redis.call('HSET', KEYS[1], 'beat', ARGV[1])
end
return 0`

// KeepStreams renews the heartbeat of the streams ids in one pipeline.
func (r *Redis) KeepStreams(ctx context.Context, owner string, ids []string) error {
	beat := time.Now().UnixMilli()
	_, err := r.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, id := range ids {
			p.Eval(ctx, keepScript, []string{r.metaKey(id)}, beat, owner)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("streamlog: renew in redis: %w", err)
	}
	return nil
}

// lostScript ends a stream (KEYS[1] its hash, KEYS[2] its events) of
// account ARGV[1] and agent ARGV[2] whose heartbeat is before ARGV[3] with
// the event ARGV[4], keeping it ARGV[5] seconds: 1 when it did, 0 when the
// stream is done or alive, -1 when it is not kept or not theirs. One script,
// so replicas that find it lost together append one event.
var lostScript = redis.NewScript(`local m = redis.call('HMGET', KEYS[1], 'account', 'agent', 'done', 'beat')
if not m[1] or m[1] == '' or m[1] ~= ARGV[1] or m[2] ~= ARGV[2] then return -1 end
if m[3] == '1' or not m[4] or tonumber(m[4]) >= tonumber(ARGV[3]) then return 0 end
redis.call('RPUSH', KEYS[2], ARGV[4])
redis.call('HSET', KEYS[1], 'done', 1, 'partial', 1, 'lost', 1)
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('EXPIRE', KEYS[2], ARGV[5])
return 1`)

// EndLostStream runs lostScript.
func (r *Redis) EndLostStream(ctx context.Context, k Key, silent time.Duration, data []byte) (bool, error) {
	keys := []string{r.metaKey(k.MessageID), r.eventsKey(k.MessageID)}
	n, err := lostScript.Run(ctx, r.client, keys, k.AccountID, k.AgentID, time.Now().Add(-silent).UnixMilli(),
		data, int(Retention/time.Second)).Int()
	switch {
	case err != nil:
		return false, fmt.Errorf("streamlog: end lost stream in redis: %w", err)
	case n < 0:
		return false, ErrNotFound
	}
	return n == 1, nil
}

// PruneStreams does nothing: Redis expires the keys.
func (r *Redis) PruneStreams(context.Context, time.Time) error { return nil }

// flag is a bool as the hash stores it.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
