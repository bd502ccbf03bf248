// Package maketargets holds the Makefile's lists of packages, and the lint
// configuration, to what the tree holds, so that a target cannot pass while
// it skips part of its work. It has no code, only tests:
//
//   - make fuzz runs every fuzz target of every module, and only targets
//     that exist: a line that names a missing target fuzzes nothing and
//     still passes, and a target left off the list is never fuzzed.
//   - make golden rewrites the golden files of every package whose tests
//     take an -update flag, and regenerates the adkv1 copies.
//   - .golangci.yml names only methods that exist: an exclusion left behind
//     by a move excludes nothing and hides that it did.
//
// The tests read the Makefile's lines generically (a package path, and for
// another module a `cd DIR &&` before it), so a package that moves needs
// only its Makefile line updated.
package maketargets
