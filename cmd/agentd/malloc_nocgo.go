//go:build !linux || !cgo

package main

// limitMallocArenas does nothing without cgo on Linux.
func limitMallocArenas(func(string) string) bool { return false }
