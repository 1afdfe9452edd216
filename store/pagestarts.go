package store

import (
	"sync"
	"time"

	"github.com/agentd/agentd/domain"
)

// pageStartsMax bounds the page starts kept; past it, they are all dropped.
const pageStartsMax = 10_000

// pageStarts remembers where the pages of an account's default listing
// (every status, by createdAt) start: the first agent at an offset, under
// the account's agent-set version. A page whose start is known is read from
// that agent on through the index, so page 500 costs what page 1 does, and
// a client reading page after page finds each start left by the page
// before. Creating or deleting an agent moves the version in the same
// transaction, on whichever replica, so a start is never used on a set of
// agents it was not read from; only createdAt and id, which never change,
// are kept.
type pageStarts struct {
	mu     sync.Mutex
	starts map[pageKey]pageStart
}

type pageKey struct {
	account string
	desc    bool
	offset  int
}

type pageStart struct {
	setVersion int64
	createdAt  time.Time
	id         string
}

// startAt is the start of a page whose first agent is a, in the set of
// agents of version setVersion. a.CreatedAt must be as read, in the
// location the database gave it: SQLite compares the text the driver
// writes it back as.
func startAt(setVersion int64, a domain.AgentSummary) pageStart {
	return pageStart{setVersion, a.CreatedAt, a.ID}
}

func newPageStarts() *pageStarts { return &pageStarts{starts: map[pageKey]pageStart{}} }

// lookup returns the start kept for the page at k, whatever version of
// the set of agents it was read under: the reader compares it with the
// version it reads the page under.
func (p *pageStarts) lookup(k pageKey) (pageStart, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.starts[k]
	return s, ok
}

// get returns the start of the page at k when it was read under setVersion.
func (p *pageStarts) get(k pageKey, setVersion int64) (pageStart, bool) {
	s, ok := p.lookup(k)
	return s, ok && s.setVersion == setVersion
}

// put keeps start as the first agent of the page at k.
func (p *pageStarts) put(k pageKey, start pageStart) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.starts) >= pageStartsMax {
		clear(p.starts)
	}
	p.starts[k] = start
}
