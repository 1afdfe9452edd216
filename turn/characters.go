package turn

import (
	"sync"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/llm"
)

// charactersMax bounds the characters kept; past it, they are all dropped.
const charactersMax = 1024

// characters keeps the llm.Character of each agent version turns read
// (parsing it from the fields was a twentieth of a plain turn's CPU). An
// agent's version moves with every change of its fields, on whichever
// replica, and every turn reads the agent afresh, so an entry is never
// used for fields it was not parsed from. Characters are only read once
// parsed, so turns share them.
type characters struct {
	mu   sync.Mutex
	byID map[string]versionedCharacter
}

type versionedCharacter struct {
	version int64
	ch      llm.Character
}

// of returns a's character.
func (c *characters) of(a domain.Agent) llm.Character {
	if a.Version == 0 { // not read from the store: nothing tells its fields apart
		return llm.CharacterFrom(a.Fields)
	}
	c.mu.Lock()
	v, ok := c.byID[a.ID]
	c.mu.Unlock()
	if ok && v.version == a.Version {
		return v.ch
	}
	ch := llm.CharacterFrom(a.Fields)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil || len(c.byID) >= charactersMax {
		c.byID = map[string]versionedCharacter{}
	}
	c.byID[a.ID] = versionedCharacter{a.Version, ch}
	return ch
}
