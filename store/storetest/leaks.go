package storetest

import "go.uber.org/goleak"

// IgnoreStatementCache ignores the janitor goroutine GORM starts for each
// pool's prepared-statement cache (gorm v1.31 never stops it; upstream
// defers the fix to v2). A process opens its store once, so it is not a
// leak that grows; tests that open many stores must not count it.
var IgnoreStatementCache = goleak.IgnoreTopFunction("gorm.io/gorm/internal/lru.NewLRU[...].func1")
