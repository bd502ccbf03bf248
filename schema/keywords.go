package schema

import "sort"

// Class says what the renderer does with a keyword.
type Class int

const (
	// Rendered keywords reach the caller: they shape a stub's Python type
	// or appear in its docstring.
	Rendered Class = iota + 1
	// Structural keywords are consumed while the schema is walked (a $ref is
	// resolved, $defs are looked up) and leave no text of their own.
	Structural
	// Ignored keywords carry no meaning for a caller of the tool.
	Ignored
)

// String returns the lower-case name of the class.
func (c Class) String() string {
	switch c {
	case Rendered:
		return "rendered"
	case Structural:
		return "structural"
	case Ignored:
		return "ignored"
	}
	return "unknown"
}

// Vocabulary names, as the last path element of the 2020-12 meta-schema URLs,
// plus the dialects the walker also reads.
const (
	VocabCore             = "core"
	VocabApplicator       = "applicator"
	VocabUnevaluated      = "unevaluated"
	VocabValidation       = "validation"
	VocabMetaData         = "meta-data"
	VocabFormatAnnotation = "format-annotation"
	VocabContent          = "content"

	// DialectOpenAPI holds the OpenAPI 3.0 Schema Object extensions.
	DialectOpenAPI = "openapi-3.0"
	// DialectGemini holds genai.Schema's snake_case aliases and extras.
	DialectGemini = "gemini"
	// DialectDraft7 holds keywords of earlier drafts that still occur.
	DialectDraft7 = "draft-07"
)

// Vocabularies lists the seven vocabularies of JSON Schema 2020-12 that the
// keyword table must cover completely.
var Vocabularies = []string{
	VocabCore, VocabApplicator, VocabUnevaluated, VocabValidation,
	VocabMetaData, VocabFormatAnnotation, VocabContent,
}

// Keyword is one row of the keyword table.
type Keyword struct {
	Name       string
	Vocabulary string
	Class      Class
	// Note says how the keyword is rendered or consumed, or why it is
	// ignored.
	Note string
}

// keywordTable is the single classification of every keyword the walker
// knows. The conformance package checks it against the 2020-12 meta-schemas.
var keywordTable = []Keyword{
	// core
	{"$id", VocabCore, Structural, "indexed as a $ref target"},
	{"$schema", VocabCore, Structural, "selects the draft used for argument validation"},
	{"$ref", VocabCore, Structural, "resolved within the declaration; sibling keywords win"},
	{"$anchor", VocabCore, Structural, "indexed as a $ref target"},
	{"$dynamicRef", VocabCore, Structural, "resolved statically to the first matching $dynamicAnchor"},
	{"$dynamicAnchor", VocabCore, Structural, "indexed as a $dynamicRef and $ref target"},
	{"$vocabulary", VocabCore, Ignored, "only meaningful inside a meta-schema"},
	{"$comment", VocabCore, Ignored, "notes for schema authors; the specification says not to show them to users"},
	{"$defs", VocabCore, Structural, "holds $ref targets; reached only through $ref"},

	// applicator
	{"prefixItems", VocabApplicator, Rendered, "tuple[...] type; nested slots as [i]"},
	{"items", VocabApplicator, Rendered, "list[T] type; items: suffix; extra items: after prefixItems"},
	{"contains", VocabApplicator, Rendered, "contains: suffix"},
	{"additionalProperties", VocabApplicator, Rendered, "dict[str, T] type; no other keys / other keys: suffix"},
	{"properties", VocabApplicator, Rendered, "parameters at the top level, nested fields below"},
	{"patternProperties", VocabApplicator, Rendered, "key patterns: suffix"},
	{"dependentSchemas", VocabApplicator, Rendered, "with <key>: suffix"},
	{"propertyNames", VocabApplicator, Rendered, "key names: suffix"},
	{"if", VocabApplicator, Rendered, "if ... then ... else ... suffix"},
	{"then", VocabApplicator, Rendered, "if ... then ... else ... suffix"},
	{"else", VocabApplicator, Rendered, "if ... then ... else ... suffix"},
	{"allOf", VocabApplicator, Structural, "merged into its parent before rendering"},
	{"anyOf", VocabApplicator, Rendered, "union type; object branches listed with -- or --"},
	{"oneOf", VocabApplicator, Rendered, "union type; object branches listed with -- or --; exactly one suffix"},
	{"not", VocabApplicator, Rendered, "not: suffix"},

	// unevaluated
	{"unevaluatedItems", VocabUnevaluated, Rendered, "no extra items / extra items: suffix"},
	{"unevaluatedProperties", VocabUnevaluated, Rendered, "no other keys / other keys: suffix"},

	// validation
	{"type", VocabValidation, Rendered, "the Python type"},
	{"const", VocabValidation, Rendered, "const= suffix"},
	{"enum", VocabValidation, Rendered, "Literal[...] type, or enum= suffix for large or structured values"},
	{"multipleOf", VocabValidation, Rendered, "multipleOf= suffix"},
	{"maximum", VocabValidation, Rendered, "maximum= suffix"},
	{"exclusiveMaximum", VocabValidation, Rendered, "exclusiveMaximum= suffix"},
	{"minimum", VocabValidation, Rendered, "minimum= suffix"},
	{"exclusiveMinimum", VocabValidation, Rendered, "exclusiveMinimum= suffix"},
	{"maxLength", VocabValidation, Rendered, "maxLength= suffix"},
	{"minLength", VocabValidation, Rendered, "minLength= suffix"},
	{"pattern", VocabValidation, Rendered, "pattern= suffix"},
	{"maxItems", VocabValidation, Rendered, "maxItems= suffix"},
	{"minItems", VocabValidation, Rendered, "minItems= suffix"},
	{"uniqueItems", VocabValidation, Rendered, "uniqueItems= suffix"},
	{"maxContains", VocabValidation, Rendered, "maxContains= suffix"},
	{"minContains", VocabValidation, Rendered, "minContains= suffix"},
	{"maxProperties", VocabValidation, Rendered, "maxProperties= suffix"},
	{"minProperties", VocabValidation, Rendered, "minProperties= suffix"},
	{"required", VocabValidation, Rendered, "required parameters have no default; nested fields say (required)"},
	{"dependentRequired", VocabValidation, Rendered, "<key> requires a, b suffix"},

	// meta-data
	{"title", VocabMetaData, Rendered, "prose when there is no description, else title= suffix"},
	{"description", VocabMetaData, Rendered, "docstring prose"},
	{"default", VocabMetaData, Rendered, "signature default or (default: ...)"},
	{"deprecated", VocabMetaData, Rendered, "deprecated flag"},
	{"readOnly", VocabMetaData, Rendered, "read-only flag"},
	{"writeOnly", VocabMetaData, Rendered, "write-only flag"},
	{"examples", VocabMetaData, Rendered, "examples= suffix (first two)"},

	// format-annotation
	{"format", VocabFormatAnnotation, Rendered, "format= suffix"},

	// content
	{"contentEncoding", VocabContent, Rendered, "contentEncoding= suffix"},
	{"contentMediaType", VocabContent, Rendered, "contentMediaType= suffix"},
	{"contentSchema", VocabContent, Rendered, "content: suffix"},

	// OpenAPI 3.0 Schema Object
	{"nullable", DialectOpenAPI, Rendered, "adds | None to the type"},
	{"example", DialectOpenAPI, Rendered, "example= suffix"},
	{"discriminator", DialectOpenAPI, Rendered, "propertyName tags union branches"},

	// genai.Schema (Gemini)
	{"propertyOrdering", DialectGemini, Ignored, "orders generated output only; stubs sort parameters"},
	{"property_ordering", DialectGemini, Ignored, "orders generated output only; stubs sort parameters"},

	// earlier drafts
	{"definitions", DialectDraft7, Structural, "holds $ref targets like $defs"},
}

// aliases maps Gemini snake_case keys to their JSON Schema names. The walker
// renames them at every schema position (never inside a properties map).
var aliases = map[string]string{
	"any_of":                "anyOf",
	"one_of":                "oneOf",
	"all_of":                "allOf",
	"additional_properties": "additionalProperties",
	"pattern_properties":    "patternProperties",
	"prefix_items":          "prefixItems",
	"max_length":            "maxLength",
	"min_length":            "minLength",
	"max_items":             "maxItems",
	"min_items":             "minItems",
	"max_properties":        "maxProperties",
	"min_properties":        "minProperties",
	"unique_items":          "uniqueItems",
	"multiple_of":           "multipleOf",
	"exclusive_minimum":     "exclusiveMinimum",
	"exclusive_maximum":     "exclusiveMaximum",
	"dependent_required":    "dependentRequired",
}

var keywordIndex = func() map[string]Keyword {
	m := make(map[string]Keyword, len(keywordTable))
	for _, k := range keywordTable {
		m[k.Name] = k
	}
	return m
}()

// Keywords returns a copy of the keyword table, sorted by vocabulary and name.
func Keywords() []Keyword {
	out := append([]Keyword(nil), keywordTable...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Vocabulary != out[j].Vocabulary {
			return out[i].Vocabulary < out[j].Vocabulary
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// LookupKeyword returns the table row for name.
func LookupKeyword(name string) (Keyword, bool) {
	k, ok := keywordIndex[name]
	return k, ok
}

// Aliases returns a copy of the Gemini snake_case alias map.
func Aliases() map[string]string {
	out := make(map[string]string, len(aliases))
	for k, v := range aliases {
		out[k] = v
	}
	return out
}
