// Command release prepares a release of the repository's Go modules at one
// version. `make release VERSION=v0.3.0` runs it from the repository's root.
//
// Every module of the repository takes the release's version: the root
// module (the core and the ADK Go v2 adapters), adkv1 (the ADK Go v1
// adapters) and deploy (the deployment manifests' checks and deploy/agentsandbox). A module that
// requires another module of the repository, as adkv1 requires the root
// module, is made to require it at that version: its go.mod names the
// version, its go.sum gets the required module's two hashes (of its module
// zip and of its go.mod), and its go.work, which builds it against the tree,
// replaces that version with the module in the tree.
//
// The hashes are computed here as the Go module proxy computes them from the
// tagged commit: the module zip is made with golang.org/x/mod/zip from the
// files `git archive` gives for the commit at HEAD, which leaves out nested
// modules and anything not committed, and a module in a subdirectory
// without a LICENSE gets the repository's. The files the release rewrites
// belong to the requiring modules only, which the required module's zip
// leaves out, so the hashes of HEAD are those of the release commit.
//
// Release refuses a version that is not vMAJOR.MINOR.PATCH (a pre-release
// such as -rc.1 may follow), a major version of 2 or above (the module
// paths have no /vN suffix, which Go requires from v2 on), a tree with
// uncommitted changes to tracked files, a go.mod it does not know of, and a
// tag that exists already. It commits, tags and pushes nothing: it prints
// the commit and the tags to make.
package main
