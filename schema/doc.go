// Package schema reads the parameter schemas of tool declarations for Code
// Mode: it normalises them, resolves their references, classifies every
// keyword, and validates tool-call arguments against them.
//
// # Input forms
//
// A declaration's schema arrives as a genai.Schema (FunctionDeclaration
// Parameters, Gemini style, with upper-case types and possibly snake_case
// keys), as the google/jsonschema-go value ADK's functiontool puts in
// ParametersJsonSchema, as the untyped map an MCP toolset passes, or in the
// OpenAPI 3.0 dialect (nullable, example, discriminator, boolean
// exclusiveMinimum). [Parameters] and [Decode] turn each into a [Document]
// of plain JSON values. The walker never decodes into a typed struct, so no
// keyword can hide in an "extra" field.
//
// # The walk
//
// [Document.Root] and the [Node] accessors (Sub, SubList, SubMap, SubSorted)
// give the effective schema at each position. Each raw schema object is
// expanded once per Document and shared by every Node on it; [Node.ID]
// identifies it, so callers can memoise what they derive from a position.
// At every position, lazily:
//
//   - Gemini aliases are renamed (max_length to maxLength, any_of to anyOf, ...),
//     null values are dropped and types are lower-cased;
//   - $ref and $dynamicRef are resolved within the document (JSON pointers,
//     $anchor, $dynamicAnchor, $id), with sibling keywords winning over the
//     target;
//   - allOf is merged: properties accumulate, required is a union, other keys
//     are last-wins, and the wrapper's own keys win;
//   - a single-branch anyOf or oneOf is folded into its parent.
//
// # Limits
//
// The walk is safe on any input. A reference already being expanded is not
// followed again and is reported by [Node.Unresolved], as is a missing
// target; at most 32 references and 256 merged objects stand behind one
// position; positions deeper than [MaxDepth] read as the empty schema.
// References never leave the declaration.
//
// # Keyword table
//
// [Keywords] is the single classification of every keyword: each of the 57
// keywords of the seven JSON Schema 2020-12 vocabularies, plus the dialect
// keywords, is [Rendered], [Structural] or [Ignored], with a note saying how
// or why. The conformance package checks the table against the official
// meta-schemas.
//
// # Argument validation
//
// [CompileValidator] compiles a declaration's schema (converted to standard
// JSON Schema by [Document.JSONSchema]) with
// github.com/santhosh-tekuri/jsonschema/v6. [Validator.Validate] returns a
// [*ValidationError] listing each violation as instance path, rule and
// message, in text written for the model to act on.
//
// Patterns are ECMA-262 regular expressions: RE2 matches those it accepts,
// an ECMAScript-mode backtracking engine with a time limit per match the
// rest. A keyword that cannot be compiled (an unreachable reference, a
// pattern no engine accepts, a value the meta-schema rejects) is left out of
// validation alone and reported by [Validator.Unenforced]; the rest of the
// schema is still enforced.
//
// Documents, Nodes and Validators are safe for concurrent use.
package schema
