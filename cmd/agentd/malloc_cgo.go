//go:build linux && cgo

package main

/*
#include <malloc.h>

// limit_arenas caps malloc's arenas at n where the C library has that
// setting (glibc); it returns whether it did.
static int limit_arenas(int n) {
#ifdef M_ARENA_MAX
	return mallopt(M_ARENA_MAX, n);
#else
	return 0;
#endif
}
*/
import "C"

// mallocArenas is how many malloc arenas agentd's C code (SQLite) may use.
//
// Go runs each cgo call on whichever thread the scheduler picks, and glibc
// gives every thread that allocates while the others hold their arenas an
// arena of its own, up to eight per core, each keeping the memory SQLite
// freed in it. Under load that was some 15 MB of agentd's RSS (in a bench
// run at 64 connections the highest RSS sampled fell from 104 MB to 88 MB
// with two arenas, at the same throughput): SQLite's allocations are small
// and brief, and two arenas are enough for its writer and its few readers
// to rarely wait on malloc's lock.
const mallocArenas = 2

// limitMallocArenas applies mallocArenas unless the operator chose a
// number through glibc's own MALLOC_ARENA_MAX; it returns whether it did.
func limitMallocArenas(getenv func(string) string) bool {
	if getenv("MALLOC_ARENA_MAX") != "" {
		return false
	}
	return C.limit_arenas(mallocArenas) == 1
}
