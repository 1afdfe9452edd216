package server

import (
	"strconv"
	"strings"

	"github.com/agentd/agentd/domain"
	"github.com/agentd/agentd/gen"
)

// noVersion is a version no resource has: an If-Match naming no entity
// tag of ours can only fail.
const noVersion int64 = -1

// etag is the entity tag of a resource's version.
func etag(version int64) *string {
	t := `"` + strconv.FormatInt(version, 10) + `"`
	return &t
}

// ifMatch is the version If-Match names: domain.AnyVersion without the
// header or for `*`, noVersion when it names none of ours (or more than
// one: a resource has one version, compared strongly).
func ifMatch(h *gen.IfMatch) int64 {
	if h == nil || strings.TrimSpace(*h) == "*" {
		return domain.AnyVersion
	}
	tags := strings.Split(*h, ",")
	if len(tags) != 1 {
		return noVersion
	}
	v, ok := versionOf(strings.TrimSpace(tags[0]))
	if !ok {
		return noVersion
	}
	return v
}

// noneMatch reports whether If-None-Match names the version: `*` or any
// of its entity tags, compared weakly as RFC 9110 says for GET.
func noneMatch(h *gen.IfNoneMatch, version int64) bool {
	if h == nil {
		return false
	}
	for _, tag := range strings.Split(*h, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" {
			return true
		}
		if v, ok := versionOf(strings.TrimPrefix(tag, "W/")); ok && v == version {
			return true
		}
	}
	return false
}

// versionOf reads an entity tag made by etag.
func versionOf(tag string) (int64, bool) {
	inner, ok := strings.CutPrefix(tag, `"`)
	if !ok {
		return 0, false
	}
	inner, ok = strings.CutSuffix(inner, `"`)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(inner, 10, 64)
	return v, err == nil && v > 0
}
