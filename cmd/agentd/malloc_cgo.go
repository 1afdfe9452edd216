//go:build linux && cgo

package main

/*
#include <malloc.h>
#include <stdlib.h>

static int arenas_limited;

// limit_arenas caps malloc's arenas at two where the C library has that
// setting (glibc), unless the operator chose a number through glibc's own
// MALLOC_ARENA_MAX. It runs as the program loads: glibc fixes its limit
// when a second thread first allocates, and the Go runtime starts threads
// before main.
__attribute__((constructor)) static void limit_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		arenas_limited = mallopt(M_ARENA_MAX, 2);
	}
#endif
}

static int malloc_arenas_limited(void) { return arenas_limited; }
*/
import "C"

// mallocArenasLimited reports whether the cap on malloc's arenas was
// applied as the program loaded: agentd runs SQLite's C code with at most
// two.
//
// Go runs each cgo call on whichever thread the scheduler picks, and glibc
// gives every thread that allocates while the others hold their arenas an
// arena of its own, up to eight per core, each keeping the memory SQLite
// freed in it. Under load that was some 15 MB of agentd's RSS (in a bench
// run at 64 connections the highest RSS sampled fell from 104 MB to 88 MB
// with two arenas, at the same throughput): SQLite's allocations are small
// and brief, and two arenas are enough for its writer and its few readers
// to rarely wait on malloc's lock.
func mallocArenasLimited() bool { return C.malloc_arenas_limited() == 1 }
