//go:build !linux || !cgo

package main

// mallocArenasLimited is false: without cgo on Linux there are no glibc
// arenas to cap.
func mallocArenasLimited() bool { return false }
