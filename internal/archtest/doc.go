// Package archtest keeps the maps of the code true by test. It has no
// code of its own: its tests read the module with `go list` and go/parser
// and fail when
//
//   - an import edge breaks a layering rule of docs/architecture.md
//     (layering_test.go: the rules, each with its reason);
//   - the dependency table of docs/architecture.md, between its
//     deps:begin and deps:end markers, differs from what `go list` says
//     (table_test.go; `go test ./internal/archtest -update` rewrites it);
//   - docs/architecture.md or a package's doc.go cites a Go identifier or
//     a file that does not exist (idents_test.go says what counts as a
//     citation).
package archtest
