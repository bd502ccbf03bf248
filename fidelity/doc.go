// Package fidelity reports what Code Mode's stubs keep of a set of tool
// declarations' schemas.
//
// [Check] walks the parameter schema and the declared result schema of every
// declaration, position by position, as written (JSON pointers into the
// schema, $defs included, references not followed). Each keyword present at
// a position gets one [Outcome] with a reason:
//
//   - [Carried]: the keyword reaches the stub's Python type or its docstring;
//   - [Consumed]: the keyword is structural ($ref, $defs, allOf, ...) and is
//     used while the schema is walked, leaving no text of its own;
//   - [Dropped]: the keyword is left out on purpose, for the reason given
//     ($comment, a specification extension such as x-internal, ...);
//   - [Lost]: the keyword is left out and nothing says so: it is not in the
//     schema package's keyword table, or its position lies deeper than
//     schema.MaxDepth.
//
// The classes and reasons come from the keyword table (schema.Keywords), so
// the report says what the renderer is built to do with each keyword.
// Gemini's snake_case aliases are reported under the name written, with the
// keyword they stand for.
//
// [Report.Lossless] is what a test asserts: nothing was lost silently.
// [Report.WriteText], [Report.WriteMarkdown] and [Report.WriteJSON] print the
// report; the codemode CLI's fidelity command is built on them.
package fidelity
