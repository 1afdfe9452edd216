package domain

import "time"

// Tier is an account's service tier; it selects the rate limits.
type Tier string

// The account tiers.
const (
	TierStandard   Tier = "standard"
	TierPro        Tier = "pro"
	TierEnterprise Tier = "enterprise"
)

// Valid reports whether t is one of the known tiers.
func (t Tier) Valid() bool {
	return t == TierStandard || t == TierPro || t == TierEnterprise
}

// Account owns API keys and agents.
type Account struct {
	ID                 string // "acct_" + lowercase ULID
	Name               string // unique
	Tier               Tier
	RPM                int // requests per minute for enterprise (0 = tier default)
	EndpointMultiplier int // enterprise multiplier of per-endpoint limits (0 = 1)
	AgentQuota         int // most agents the account may have
	// MonthlyBudgetMicros is what the account's agents may spend in a UTC
	// calendar month, in millionths of a US dollar; 0 sets no budget.
	MonthlyBudgetMicros int64
	CreatedAt           time.Time
}

// AccountChanges lists the account settings to change; a nil pointer keeps
// the stored value.
type AccountChanges struct {
	Tier                                *Tier
	RPM, EndpointMultiplier, AgentQuota *int
	MonthlyBudgetMicros                 *int64 // 0 removes the budget
}

// Scope is what an API key may do.
type Scope string

// The key scopes.
const (
	ScopeRead  Scope = "read"  // GET requests only
	ScopeWrite Scope = "write" // everything in the API
)

// Valid reports whether sc is a known scope.
func (sc Scope) Valid() bool { return sc == ScopeRead || sc == ScopeWrite }

// APIKey describes a stored key. The key itself is never stored.
type APIKey struct {
	ID         string // "key_" + lowercase ULID
	AccountID  string
	Prefix     string // the first store.KeyPrefixLen characters of the key, e.g. "agk_AbCdEfGh"
	Scope      Scope
	CreatedAt  time.Time
	ExpiresAt  *time.Time // nil = never
	RevokedAt  *time.Time // nil = not revoked
	LastUsedAt *time.Time // last successful Authenticate, to the minute; nil = never
}

// Principal is who a key authenticates.
type Principal struct {
	Account Account
	Key     APIKey
}

// Limits are the rate limits an account's tier gives it.
type Limits struct {
	// RPM is the account's own limit of requests per minute.
	RPM int64
	// EndpointMultiplier is how many times the spec's per-endpoint limits
	// the account gets.
	EndpointMultiplier int64
}

// tierLimits are the limits of the tiers with fixed figures.
var tierLimits = map[Tier]Limits{TierStandard: {RPM: 60, EndpointMultiplier: 1}, TierPro: {RPM: 300, EndpointMultiplier: 5}}

// Limits are a's rate limits: standard 60 requests a minute and the
// spec's endpoint limits, pro 300 and five times them, enterprise its own
// figures (the standard ones where it has none).
func (a Account) Limits() Limits {
	if l, ok := tierLimits[a.Tier]; ok {
		return l
	}
	l := tierLimits[TierStandard]
	if a.Tier == TierEnterprise {
		if a.RPM > 0 {
			l.RPM = int64(a.RPM)
		}
		if a.EndpointMultiplier > 0 {
			l.EndpointMultiplier = int64(a.EndpointMultiplier)
		}
	}
	return l
}
