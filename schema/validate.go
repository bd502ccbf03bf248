package schema

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"google.golang.org/genai"
)

// maxViolations caps the violations one ValidationError lists.
const maxViolations = 20

// maxStandardDepth caps the conversion to a standard JSON Schema; deeper
// positions accept anything.
const maxStandardDepth = 128

// declURL is the base URL under which a declaration's schema is compiled. It
// is never fetched.
const declURL = "urn:codemode:declaration"

// Validator checks a tool call's arguments against the tool's declared
// parameter schema. It is safe for concurrent use.
type Validator struct {
	tool       string
	sch        *jsonschema.Schema
	unenforced []Unenforced
}

// CompileValidator compiles decl's parameter schema for argument validation.
// Gemini-style Parameters are converted to JSON Schema first (upper-case
// types lowered, snake_case aliases renamed, nullable turned into a null
// type). Patterns are ECMA-262 regular expressions (see compileRegexp).
//
// References outside the declaration are never loaded. A keyword that
// cannot be compiled, such as such a reference, a pattern no engine
// accepts or a value the JSON Schema meta-schema rejects, is left out of
// validation alone and listed by [Validator.Unenforced]; the rest of the
// schema is still enforced. An error is returned only when the schema
// cannot be compiled even so.
func CompileValidator(decl *genai.FunctionDeclaration) (*Validator, error) {
	doc, err := Parameters(decl)
	if err != nil {
		return nil, err
	}
	name := ""
	if decl != nil {
		name = decl.Name
	}
	root := doc.JSONSchema()
	var unenforced []Unenforced
	dropPatterns(root, &unenforced)
	for round := 0; ; round++ {
		sch, err := compile(root)
		if err == nil {
			return &Validator{tool: name, sch: sch, unenforced: unenforced}, nil
		}
		if round == maxDropRounds || !dropBroken(root, err, &unenforced) {
			return nil, fmt.Errorf("schema: tool %q: parameter schema does not compile: %w", name, err)
		}
	}
}

func compile(root any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(noLoader{})
	c.UseRegexpEngine(compileRegexp)
	if err := c.AddResource(declURL, root); err != nil {
		return nil, err
	}
	return c.Compile(declURL)
}

// Unenforced lists the keywords of the schema that validation leaves out
// because they cannot be compiled, in the order they were found.
func (v *Validator) Unenforced() []Unenforced {
	return append([]Unenforced(nil), v.unenforced...)
}

// noLoader refuses every URL, so that validation never touches the network
// or the file system.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("reference %q lies outside the declaration", url)
}

// Validate checks args. A nil map is checked as an empty object. The error,
// if any, is a *ValidationError.
func (v *Validator) Validate(args map[string]any) error {
	if args == nil {
		args = map[string]any{}
	}
	inst, err := toJSON(args)
	if err != nil {
		return &ValidationError{Tool: v.tool, Violations: []Violation{{Rule: "type", Message: err.Error()}}}
	}
	err = v.sch.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return &ValidationError{Tool: v.tool, Violations: []Violation{{Message: err.Error()}}}
	}
	out := &ValidationError{Tool: v.tool}
	collect(ve, &out.Violations)
	sort.SliceStable(out.Violations, func(i, j int) bool {
		a, b := out.Violations[i], out.Violations[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Rule < b.Rule
	})
	out.Violations = dedupe(out.Violations)
	if len(out.Violations) > maxViolations {
		out.Omitted = len(out.Violations) - maxViolations
		out.Violations = out.Violations[:maxViolations]
	}
	return out
}

var printer = message.NewPrinter(language.English)

func collect(e *jsonschema.ValidationError, out *[]Violation) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collect(c, out)
		}
		return
	}
	kw := e.ErrorKind.KeywordPath()
	msg := e.ErrorKind.LocalizedString(printer)
	if len(kw) > 0 {
		// Some of the validator's messages start with their keyword, which
		// ValidationError already names as the rule: say it once.
		msg = strings.TrimPrefix(msg, kw[len(kw)-1]+": ")
	}
	*out = append(*out, Violation{
		Path:    pointer(e.InstanceLocation),
		Rule:    strings.Join(kw, "/"),
		Message: msg,
	})
}

func dedupe(vs []Violation) []Violation {
	out := vs[:0]
	for i, v := range vs {
		if i > 0 && v == vs[i-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}

func pointer(loc []string) string {
	var sb strings.Builder
	for _, tok := range loc {
		sb.WriteByte('/')
		sb.WriteString(escapeToken(tok))
	}
	return sb.String()
}

// Violation is one failed rule.
type Violation struct {
	// Path is the JSON pointer of the offending value within the arguments;
	// "" is the arguments object itself.
	Path string
	// Rule is the keyword that failed, such as "minimum" or "required".
	Rule string
	// Message says what was expected and what was found.
	Message string
}

// ValidationError lists every rule the arguments of a tool call break. Its
// text is written for the model: one line per violation, naming the path and
// the rule.
type ValidationError struct {
	Tool       string
	Violations []Violation
	// Omitted counts violations left out beyond the first 20.
	Omitted int
}

func (e *ValidationError) Error() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "invalid arguments for tool %q:", e.Tool)
	for _, v := range e.Violations {
		path := v.Path
		if path == "" {
			path = "(arguments)"
		} else {
			path = "arguments" + path
		}
		rule := v.Rule
		if rule == "" {
			rule = "schema"
		}
		fmt.Fprintf(&sb, "\n- %s: %s: %s", path, rule, v.Message)
	}
	if e.Omitted > 0 {
		fmt.Fprintf(&sb, "\n- and %d more", e.Omitted)
	}
	return sb.String()
}

// JSONSchema returns the document as a standard JSON Schema 2020-12 value:
// Gemini aliases renamed, types lower-cased, nullable expressed with the null
// type, OpenAPI-only keywords removed. References are kept for the validator
// to resolve.
func (d *Document) JSONSchema() any {
	out := standard(d.root, 0)
	if m, ok := out.(map[string]any); ok {
		if _, has := m["type"]; !has && len(m) == 0 {
			m["type"] = "object"
		}
	}
	return out
}

var (
	singleSchemaKeys = []string{"items", "additionalProperties", "not", "if", "then", "else", "contains",
		"propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	listSchemaKeys = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
	mapSchemaKeys  = []string{"properties", "patternProperties", "dependentSchemas", "$defs", "definitions"}
)

func standard(v any, depth int) any {
	switch t := v.(type) {
	case bool:
		return t
	case map[string]any:
		if depth > maxStandardDepth {
			return true
		}
		kw := normalise(t)
		delete(kw, "example")
		delete(kw, "discriminator")
		delete(kw, "propertyOrdering")
		delete(kw, "property_ordering")
		for _, k := range singleSchemaKeys {
			switch s := kw[k].(type) {
			case map[string]any, bool:
				kw[k] = standard(s, depth+1)
			case []any:
				if k == "items" {
					// The array form of items is the tuple form of earlier drafts.
					delete(kw, "items")
					if _, has := kw["prefixItems"]; !has {
						kw["prefixItems"] = s
					}
				} else {
					delete(kw, k)
				}
			case nil:
			default:
				delete(kw, k)
			}
		}
		for _, k := range listSchemaKeys {
			if s, ok := kw[k].([]any); ok {
				out := make([]any, len(s))
				for i, e := range s {
					out[i] = standard(e, depth+1)
				}
				kw[k] = out
			}
		}
		for _, k := range mapSchemaKeys {
			if s, ok := kw[k].(map[string]any); ok {
				out := make(map[string]any, len(s))
				for name, e := range s {
					out[name] = standard(e, depth+1)
				}
				kw[k] = out
			}
		}
		numericEnum(kw)
		if b, _ := kw["nullable"].(bool); b {
			addNull(kw)
		}
		delete(kw, "nullable")
		return kw
	}
	// Anything else is not a schema; it constrains nothing.
	return true
}

// numericEnum turns the string enum values genai.Schema requires into
// numbers when the type is integer or number.
func numericEnum(kw map[string]any) {
	t, _ := kw["type"].(string)
	if t != "integer" && t != "number" {
		return
	}
	arr, ok := kw["enum"].([]any)
	if !ok {
		return
	}
	out := make([]any, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			out[i] = e
			continue
		}
		n, err := toJSON([]byte(s))
		if err != nil {
			return
		}
		out[i] = n
	}
	kw["enum"] = out
}

func addNull(kw map[string]any) {
	if e, ok := kw["enum"].([]any); ok {
		kw["enum"] = append(append([]any(nil), e...), nil)
	}
	switch t := kw["type"].(type) {
	case string:
		if t != "null" {
			kw["type"] = []any{t, "null"}
		}
		return
	case []any:
		for _, e := range t {
			if e == "null" {
				return
			}
		}
		kw["type"] = append(append([]any(nil), t...), "null")
		return
	}
	for _, k := range []string{"$ref", "anyOf", "oneOf", "allOf"} {
		if _, ok := kw[k]; ok {
			inner := make(map[string]any, len(kw))
			for key, v := range kw {
				if key != "$defs" && key != "definitions" && key != "$id" && key != "$schema" {
					inner[key] = v
					delete(kw, key)
				}
			}
			kw["anyOf"] = []any{map[string]any{"type": "null"}, inner}
			return
		}
	}
}
