package store

import (
	"sync"
	"time"
)

// AuthCacheTTL bounds how long Authenticate trusts what it read about a key
// and its account: a key revoked by another process (the agentd CLI, another
// replica) is refused at most this long after the revocation, and account
// settings changed elsewhere (tier, limits, agent quota) apply within it.
// A key revoked through this Store is refused at once.
const AuthCacheTTL = 5 * time.Second

// authCacheMax bounds the entries of the cache; past it, expired entries are
// dropped, and if none were, the whole cache.
const authCacheMax = 10_000

// authCache maps key hashes to what Authenticate read for them, so a request
// costs no query while the entry is fresh.
type authCache struct {
	mu      sync.RWMutex
	entries map[string]authEntry // by key hash
	// drops counts invalidations: an entry read before one may predate it,
	// so put refuses it (see epoch).
	drops uint64
}

type authEntry struct {
	key     keyRow
	account accountRow
	until   time.Time // read again at or after this time
}

func newAuthCache() *authCache { return &authCache{entries: map[string]authEntry{}} }

// get returns the entry of hash if it is still fresh at t.
func (c *authCache) get(hash string, t time.Time) (authEntry, bool) {
	c.mu.RLock()
	e, ok := c.entries[hash]
	c.mu.RUnlock()
	if !ok || !t.Before(e.until) {
		return authEntry{}, false
	}
	return e, true
}

// epoch is taken before reading a key: put keeps the read only if nothing
// was invalidated meanwhile, so a revocation committed during the read
// cannot be hidden by a stale entry.
func (c *authCache) epoch() uint64 {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.drops
}

// put stores what was read at t about the key of hash, unless an
// invalidation happened since epoch.
func (c *authCache) put(hash string, key keyRow, account accountRow, t time.Time, epoch uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops != epoch {
		return
	}
	if len(c.entries) >= authCacheMax {
		for h, e := range c.entries {
			if !t.Before(e.until) {
				delete(c.entries, h)
			}
		}
		if len(c.entries) >= authCacheMax {
			clear(c.entries)
		}
	}
	c.entries[hash] = authEntry{key: key, account: account, until: t.Add(AuthCacheTTL)}
}

// dropKey forgets the key whose hash is hash.
func (c *authCache) dropKey(hash string) {
	c.mu.Lock()
	delete(c.entries, hash)
	c.drops++
	c.mu.Unlock()
}

// dropAccount forgets every key of the account id.
func (c *authCache) dropAccount(id ctext) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	for h, e := range c.entries {
		if e.account.ID == id {
			delete(c.entries, h)
		}
	}
}
