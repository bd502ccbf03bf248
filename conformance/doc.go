// Package conformance holds the keyword suite of the schema walker.
//
// # What it checks
//
// The suite reads the keyword set of JSON Schema 2020-12 from the official
// meta-schemas of its seven vocabularies (core, applicator, unevaluated,
// validation, meta-data, format-annotation and content). It takes them from
// the copies bundled in github.com/santhosh-tekuri/jsonschema/v6, so it needs
// no network. Every keyword named in a meta-schema's "properties" must have a
// row in the schema package's keyword table (see [schema.Keywords]), and
// every table row filed under one of those vocabularies must name a keyword
// that the meta-schemas define, in that same vocabulary.
//
// A keyword is rendered (it reaches the stub's type or docstring), consumed
// structurally (a $ref is resolved, $defs are looked up) or ignored with a
// stated reason. Adding a keyword to the specification without classifying
// it, or dropping a row from the table, makes the suite fail, so no keyword
// can be lost silently.
//
// # Running it
//
//	go test ./conformance/...
//
// The package has no exported API: it is its tests. They call its check
// with tables that lack a keyword or name one the specification does not,
// to show that the suite fails when the table is incomplete.
package conformance
