package connect

import (
	"encoding/json"
	"math"
	"strings"
	"sync"
	"time"
)

// Limits of settings.<platform>.userRateLimit, in messages per minute per
// platform user.
const (
	// DefaultUserRateLimit applies when userRateLimit is absent or is not
	// an integer from 1 to MaxUserRateLimit.
	DefaultUserRateLimit = 10
	// MaxUserRateLimit is the highest userRateLimit the contract takes.
	MaxUserRateLimit = 600
)

// rateWindow is the span userRateLimit counts messages over; a user with
// no message admitted within it is forgotten.
const rateWindow = time.Minute

// maxTrackedUsers bounds the users a Policy remembers at once: the users
// with a message admitted within the last rateWindow.
const maxTrackedUsers = 10000

// sweepWhenFull is how often, at most, a Policy whose table is full looks
// for idle users to forget before refusing a new one.
const sweepWhenFull = time.Second

// Sender is who wrote a platform message.
type Sender struct {
	// ID is the platform's numeric user id in decimal ("42"), compared
	// exactly.
	ID string
	// Username is the platform's username, "" when the user has none;
	// compared case-insensitively and without a leading '@'.
	Username string
}

// Verdict is what a Policy decides about a message.
type Verdict int

const (
	// Admitted: answer the message.
	Admitted Verdict = iota
	// NotAllowed: a private message from a user outside a non-empty
	// allowedUsers; answer nothing.
	NotAllowed
	// RateLimited: the user has had userRateLimit messages admitted within
	// the last minute; answer nothing.
	RateLimited
)

// String is the verdict as a metric label value: "admitted",
// "not_allowed" or "rate_limited".
func (v Verdict) String() string {
	switch v {
	case Admitted:
		return "admitted"
	case NotAllowed:
		return "not_allowed"
	case RateLimited:
		return "rate_limited"
	}
	return "unknown"
}

// Policy decides who may talk to one platform connection and how often,
// from its settings.<platform>: allowedUsers (private chats only) and
// userRateLimit (messages per minute per user, a sliding window). It is
// safe for concurrent use. Its memory is bounded: a user with no message
// admitted within the last minute is forgotten, and at most
// maxTrackedUsers are remembered; while that many users have each had a
// message admitted within the minute, a new user is RateLimited.
type Policy struct {
	limit int
	// allowedUsers empty: every private chat is answered.
	allowedUsers userSet

	mu        sync.Mutex
	users     map[string][]time.Time // admitted messages within rateWindow, oldest first
	maxUsers  int
	lastSweep time.Time
}

// NewPolicy returns the Policy of a platform's settings (settings.<platform>
// as stored, nil for none). Members of the wrong shape mean their default
// (the contract refuses them on write): no allowlist, DefaultUserRateLimit.
func NewPolicy(settings json.RawMessage) *Policy {
	var members struct {
		UserRateLimit json.RawMessage `json:"userRateLimit"`
		AllowedUsers  json.RawMessage `json:"allowedUsers"`
	}
	_ = json.Unmarshal(settings, &members)
	p := &Policy{limit: DefaultUserRateLimit, allowedUsers: usersOf(members.AllowedUsers),
		users: map[string][]time.Time{}, maxUsers: maxTrackedUsers}
	var limit float64
	if json.Unmarshal(members.UserRateLimit, &limit) == nil && limit == math.Trunc(limit) && limit >= 1 && limit <= MaxUserRateLimit {
		p.limit = int(limit)
	}
	return p
}

// userSet is a list of platform users as settings name them
// (allowedUsers, adminUsers): an entry of digits only is a user id, any
// other a username, with or without '@', in any case.
type userSet struct {
	ids   map[string]struct{}
	names map[string]struct{} // lower-cased, without the '@'
}

// usersOf reads a settings member listing users; anything but an array
// of strings lists none (the contract refuses it on write).
func usersOf(member json.RawMessage) userSet {
	var entries []string
	_ = json.Unmarshal(member, &entries)
	u := userSet{ids: map[string]struct{}{}, names: map[string]struct{}{}}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if isDigits(e) {
			u.ids[e] = struct{}{}
		} else if name := normalizeName(e); name != "" {
			u.names[name] = struct{}{}
		}
	}
	return u
}

// empty reports whether u lists nobody.
func (u userSet) empty() bool { return len(u.ids) == 0 && len(u.names) == 0 }

// has reports whether u lists user, by id or by username.
func (u userSet) has(user Sender) bool {
	if _, ok := u.ids[user.ID]; ok && user.ID != "" {
		return true
	}
	name := normalizeName(user.Username)
	_, ok := u.names[name]
	return ok && name != ""
}

// isDigits reports whether s is made of ASCII digits only.
func isDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// UserRateLimit is the number of messages per minute the Policy admits
// from one user.
func (p *Policy) UserRateLimit() int { return p.limit }

// Admit decides about a message from user at now; private is true for a
// private chat (a Telegram private chat, a Discord DM). A private message
// from a user outside a non-empty allowedUsers is NotAllowed (an entry of
// digits only matches the id, any other entry the username); any message
// past the user's userRateLimit within the last minute is RateLimited. Only
// admitted messages count against the limit. Times should not go backwards
// by more than a little: the window trusts now.
func (p *Policy) Admit(user Sender, private bool, now time.Time) Verdict {
	if private && !p.allowed(user) {
		return NotAllowed
	}
	key := "id:" + user.ID
	if user.ID == "" {
		key = "name:" + normalizeName(user.Username)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.lastSweep) >= rateWindow {
		p.sweep(now)
	}
	times, known := p.users[key]
	if !known && len(p.users) >= p.maxUsers {
		if now.Sub(p.lastSweep) >= sweepWhenFull {
			p.sweep(now)
		}
		if len(p.users) >= p.maxUsers {
			return RateLimited
		}
	}
	times = live(times, now)
	if len(times) >= p.limit {
		p.users[key] = times
		return RateLimited
	}
	p.users[key] = append(times, now)
	return Admitted
}

// allowed reports whether user may talk in private.
func (p *Policy) allowed(user Sender) bool { return p.allowedUsers.empty() || p.allowedUsers.has(user) }

// normalizeName is a username as compared: lower-cased, without a leading
// '@'.
func normalizeName(s string) string {
	return strings.ToLower(strings.TrimPrefix(strings.TrimSpace(s), "@"))
}

// live drops the times of times (oldest first) that are rateWindow or more
// before now, in place.
func live(times []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(times) && now.Sub(times[i]) >= rateWindow {
		i++
	}
	n := copy(times, times[i:])
	return times[:n]
}

// sweep forgets the users with no message admitted within rateWindow
// before now. p.mu is held.
func (p *Policy) sweep(now time.Time) {
	for key, times := range p.users {
		if len(times) == 0 || now.Sub(times[len(times)-1]) >= rateWindow {
			delete(p.users, key)
		}
	}
	p.lastSweep = now
}
