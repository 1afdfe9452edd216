package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/agentd/agentd/domain"
	"gorm.io/gorm"
)

// Key format.
const (
	// KeyPrefix starts every API key.
	KeyPrefix = "agk_"
	// keyRandomLen is how many base62 characters CreateKey generates.
	keyRandomLen = 40
	// keyMinRandomLen is the fewest base62 characters a well-formed key has.
	keyMinRandomLen = 32
	// keyMaxLen bounds what Authenticate bothers to hash.
	keyMaxLen = 256
	// KeyPrefixLen is how many leading characters of a key are kept in clear
	// to identify it (keys list, keys revoke).
	KeyPrefixLen = 12
	// lastUsedEvery is how stale LastUsedAt may get before Authenticate
	// refreshes it; it bounds the writes authentication causes.
	lastUsedEvery = time.Minute
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// CreateKey makes a new key "agk_" + 40 random base62 characters for the
// account called accountName and stores its SHA-256 and prefix. The plaintext
// is returned once and cannot be recovered. It returns ErrNotFound for an
// unknown account and ErrInvalid for an unknown scope or an expiry not in the
// future.
func (s Accounts) CreateKey(ctx context.Context, accountName string, scope domain.Scope, expiresAt *time.Time) (string, domain.APIKey, error) {
	t := s.now()
	if !scope.Valid() {
		return "", domain.APIKey{}, wrap("create key", invalidf("unknown scope %q", scope))
	}
	if expiresAt != nil && !expiresAt.After(t) {
		return "", domain.APIKey{}, wrap("create key", invalidf("expiry %s is not in the future", expiresAt.UTC().Format(time.RFC3339)))
	}
	plain := KeyPrefix + randomBase62(keyRandomLen)
	row := keyRow{
		ID: ctext(newID("key_", t)), Prefix: ctext(plain[:KeyPrefixLen]), Hash: ctext(hashKey(plain)),
		Scope: string(scope), CreatedAt: t, ExpiresAt: msPtr(expiresAt),
	}
	err := s.write(ctx, "create key", func(tx *gorm.DB) error {
		var acct accountRow
		if err := tx.Select("id").Take(&acct, "name = ?", accountName).Error; err != nil {
			return err
		}
		row.AccountID = acct.ID
		return tx.Create(&row).Error
	})
	if err != nil {
		return "", domain.APIKey{}, err
	}
	return plain, toKey(row), nil
}

// ListKeys returns the keys of the account called accountName, oldest first,
// revoked and expired ones included. It returns ErrNotFound for an unknown account.
func (s Accounts) ListKeys(ctx context.Context, accountName string) ([]domain.APIKey, error) {
	db := s.read(ctx)
	var acct accountRow
	if err := db.Select("id").Take(&acct, "name = ?", accountName).Error; err != nil {
		return nil, wrap("list keys", err)
	}
	var rows []keyRow
	if err := db.Where("account_id = ?", acct.ID).Order("created_at, id").Find(&rows).Error; err != nil {
		return nil, wrap("list keys", err)
	}
	out := make([]domain.APIKey, len(rows))
	for i, r := range rows {
		out[i] = toKey(r)
	}
	return out, nil
}

// RevokeKey revokes the key whose prefix is prefix and returns it. Revoking
// a revoked key changes nothing. It returns ErrNotFound if no key has that
// prefix and ErrConflict if several do.
func (s Accounts) RevokeKey(ctx context.Context, prefix string) (domain.APIKey, error) {
	var out domain.APIKey
	var hash string
	err := s.write(ctx, "revoke key", func(tx *gorm.DB) error {
		var rows []keyRow
		if err := tx.Where("prefix = ?", prefix).Limit(2).Find(&rows).Error; err != nil {
			return err
		}
		switch len(rows) {
		case 0:
			return domain.ErrNotFound
		case 2:
			return domain.ErrConflict
		}
		row := rows[0]
		hash = string(row.Hash)
		if row.RevokedAt == nil {
			t := s.now()
			row.RevokedAt = &t
			if err := tx.Model(&keyRow{}).Where("id = ?", row.ID).Update("revoked_at", t).Error; err != nil {
				return err
			}
		}
		out = toKey(row)
		return nil
	})
	if err == nil {
		s.auth.dropKey(hash) // after the commit: a read now sees the revocation
	}
	return out, err
}

// Authenticate returns who the key plaintext belongs to. It returns
// ErrUnauthorized when the key is malformed (not "agk_" + at least 32 base62
// characters), unknown, revoked or expired. What it reads (the key by hash,
// then its account) is cached for AuthCacheTTL: a revocation or account
// change made through this Store applies at once, one made by another
// process within AuthCacheTTL. Expiry is checked on every call. The use is
// recorded in the background (see useRecorder): the returned key's
// LastUsedAt is the one stored when it was read.
func (s Accounts) Authenticate(ctx context.Context, plaintext string) (domain.Principal, error) {
	if !wellFormedKey(plaintext) {
		return domain.Principal{}, wrap("authenticate", domain.ErrUnauthorized)
	}
	hash := hashKey(plaintext)
	t := s.now()
	e, ok := s.auth.get(hash, t)
	if !ok {
		epoch := s.auth.epoch()
		var err error
		if e, err = s.readKey(ctx, hash); err != nil {
			return domain.Principal{}, wrap("authenticate", err)
		}
		s.auth.put(hash, e.key, e.account, t, epoch)
	}
	if e.key.RevokedAt != nil || (e.key.ExpiresAt != nil && !e.key.ExpiresAt.After(t)) {
		return domain.Principal{}, wrap("authenticate", domain.ErrUnauthorized)
	}
	s.uses.record(e.key, t)
	return domain.Principal{Account: toAccount(e.account), Key: toKey(e.key)}, nil
}

// readKey reads the key whose hash is hash and its account; an unknown key
// is ErrUnauthorized.
func (s *core) readKey(ctx context.Context, hash string) (authEntry, error) {
	db := s.read(ctx)
	var e authEntry
	err := db.Take(&e.key, "hash = ?", hash).Error
	if err == nil {
		err = db.Take(&e.account, "id = ?", e.key.AccountID).Error
	}
	if isNotFound(err) {
		err = domain.ErrUnauthorized
	}
	return e, err
}

// wellFormedKey reports whether k looks like an API key.
func wellFormedKey(k string) bool {
	rest, ok := strings.CutPrefix(k, KeyPrefix)
	if !ok || len(rest) < keyMinRandomLen || len(k) > keyMaxLen {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte(base62, rest[i]) < 0 {
			return false
		}
	}
	return true
}

// hashKey is the stored form of a key: hex SHA-256.
func hashKey(k string) string {
	sum := sha256.Sum256([]byte(k))
	return hex.EncodeToString(sum[:])
}

// randomBase62 returns n uniformly random base62 characters from crypto/rand.
func randomBase62(n int) string {
	out := make([]byte, 0, n)
	buf := make([]byte, n*2)
	for len(out) < n {
		_, _ = rand.Read(buf) // never fails (crypto/rand crashes the program instead)
		for _, b := range buf {
			if b < 248 && len(out) < n { // 248 = 4*62: rejecting the rest avoids modulo bias
				out = append(out, base62[b%62])
			}
		}
	}
	return string(out)
}

func toKey(r keyRow) domain.APIKey {
	return domain.APIKey{
		ID: string(r.ID), AccountID: string(r.AccountID), Prefix: string(r.Prefix), Scope: domain.Scope(r.Scope),
		CreatedAt: utc(r.CreatedAt), ExpiresAt: utcPtr(r.ExpiresAt), RevokedAt: utcPtr(r.RevokedAt),
		LastUsedAt: utcPtr(r.LastUsedAt),
	}
}
