// Package web holds the console and the API reference page, built from
// web/src and web/static by `make web` into web/dist and committed, so the
// binary serves them without Node:
//
//	index.html  the console (GET /)
//	docs.html   the API reference (GET /docs)
//	ui/         their scripts and styles (GET /ui/...)
package web

import (
	"embed"
	"io/fs"
)

//go:embed dist
var dist embed.FS

// Assets is web/dist as built by `make web`.
var Assets fs.FS = mustSub(dist, "dist")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		// fs.Sub fails only for an invalid path name, never for "dist".
		panic(err)
	}
	return sub
}
