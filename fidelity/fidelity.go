package fidelity

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/schema"
)

// Outcome says what became of one keyword at one schema position.
type Outcome int

const (
	// Carried keywords reach the stub's type or docstring.
	Carried Outcome = iota + 1
	// Consumed keywords are structural: used by the walk, no text of
	// their own.
	Consumed
	// Dropped keywords are left out for a stated reason.
	Dropped
	// Lost keywords are left out silently.
	Lost
)

var outcomeNames = [...]string{Carried: "carried", Consumed: "consumed", Dropped: "dropped", Lost: "lost"}

// String returns the lower-case name of the outcome.
func (o Outcome) String() string {
	if o >= Carried && o <= Lost {
		return outcomeNames[o]
	}
	return "unknown"
}

// MarshalText encodes the outcome by name.
func (o Outcome) MarshalText() ([]byte, error) {
	if o < Carried || o > Lost {
		return nil, fmt.Errorf("fidelity: no outcome %d", int(o))
	}
	return []byte(o.String()), nil
}

// UnmarshalText decodes an outcome name.
func (o *Outcome) UnmarshalText(b []byte) error {
	for i, n := range outcomeNames {
		if i > 0 && n == string(b) {
			*o = Outcome(i)
			return nil
		}
	}
	return fmt.Errorf("fidelity: unknown outcome %q (want carried, consumed, dropped or lost)", b)
}

// Schema names the two schemas of a declaration.
const (
	Parameters = "parameters"
	Response   = "response"
)

// Finding is one keyword at one schema position.
type Finding struct {
	// Schema is Parameters or Response.
	Schema string `json:"schema"`
	// Pointer is the JSON pointer of the position within Schema; "" is
	// its root.
	Pointer string `json:"pointer"`
	// Keyword is the keyword as written.
	Keyword string  `json:"keyword"`
	Outcome Outcome `json:"outcome"`
	// Reason says how the keyword is carried or consumed, or why it is
	// dropped or lost.
	Reason string `json:"reason"`
}

// Position is the finding's schema and pointer as one string, such as
// "parameters#/properties/city".
func (f Finding) Position() string { return f.Schema + "#" + f.Pointer }

// Totals counts findings by outcome.
type Totals struct {
	Carried  int `json:"carried"`
	Consumed int `json:"consumed"`
	Dropped  int `json:"dropped"`
	Lost     int `json:"lost"`
}

func (t *Totals) add(o Outcome) {
	switch o {
	case Carried:
		t.Carried++
	case Consumed:
		t.Consumed++
	case Dropped:
		t.Dropped++
	case Lost:
		t.Lost++
	}
}

func (t *Totals) sum(u Totals) {
	t.Carried += u.Carried
	t.Consumed += u.Consumed
	t.Dropped += u.Dropped
	t.Lost += u.Lost
}

// Tool is the report of one declaration.
type Tool struct {
	Name     string    `json:"name"`
	Findings []Finding `json:"findings"`
	Totals   Totals    `json:"totals"`
}

// Report is the fidelity of a set of declarations.
type Report struct {
	Tools  []Tool `json:"tools"`
	Totals Totals `json:"totals"`
}

// Lossless reports whether nothing was lost silently.
func (r *Report) Lossless() bool { return r.Totals.Lost == 0 }

// LostFinding is a lost keyword and the tool it belongs to.
type LostFinding struct {
	Tool string
	Finding
}

// Lost returns every finding with the Lost outcome, in report order.
func (r *Report) Lost() []LostFinding {
	var out []LostFinding
	for _, t := range r.Tools {
		for _, f := range t.Findings {
			if f.Outcome == Lost {
				out = append(out, LostFinding{Tool: t.Name, Finding: f})
			}
		}
	}
	return out
}

// Check reports the fidelity of decls, in their order. It fails on a
// declaration without a name, or whose schema is not JSON.
func Check(decls []*genai.FunctionDeclaration) (*Report, error) {
	r := &Report{Tools: make([]Tool, 0, len(decls))}
	for i, d := range decls {
		if d == nil || d.Name == "" {
			return nil, fmt.Errorf("fidelity: declaration %d has no name", i)
		}
		t := Tool{Name: d.Name}
		params, err := schema.Parameters(d)
		if err != nil {
			return nil, fmt.Errorf("fidelity: tool %q: parameters: %w", d.Name, err)
		}
		w := walker{schema: Parameters}
		w.walk(params.Raw(), "", 0)
		t.Findings = w.out
		resp, ok, err := schema.Response(d)
		if err != nil {
			return nil, fmt.Errorf("fidelity: tool %q: response: %w", d.Name, err)
		}
		if ok {
			w := walker{schema: Response}
			w.walk(resp.Raw(), "", 0)
			t.Findings = append(t.Findings, w.out...)
		}
		for _, f := range t.Findings {
			t.Totals.add(f.Outcome)
		}
		r.Totals.sum(t.Totals)
		r.Tools = append(r.Tools, t)
	}
	return r, nil
}

// shape is how a keyword holds subschemas.
type shape uint8

const (
	one     shape = iota + 1 // a schema
	list                     // an array of schemas
	named                    // an object of schemas by name
	oneList                  // a schema, or (draft-07 items) an array of them
)

// shapes lists the keywords whose values are schemas, by canonical name.
var shapes = map[string]shape{
	"items": oneList, "contains": one, "additionalProperties": one,
	"propertyNames": one, "if": one, "then": one, "else": one, "not": one,
	"unevaluatedItems": one, "unevaluatedProperties": one, "contentSchema": one,
	"prefixItems": list, "allOf": list, "anyOf": list, "oneOf": list,
	"properties": named, "patternProperties": named, "dependentSchemas": named,
	"$defs": named, "definitions": named,
}

var aliases = schema.Aliases()

type walker struct {
	schema string
	out    []Finding
}

func (w *walker) add(ptr, kw string, o Outcome, reason string) {
	w.out = append(w.out, Finding{Schema: w.schema, Pointer: ptr, Keyword: kw, Outcome: o, Reason: reason})
}

// walk reports the keywords of the schema v at ptr, then its subschemas.
func (w *walker) walk(v any, ptr string, depth int) {
	obj, ok := v.(map[string]any)
	if !ok {
		return // a boolean schema has no keywords
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if depth > schema.MaxDepth {
		for _, k := range keys {
			w.add(ptr, k, Lost, "position deeper than "+strconv.Itoa(schema.MaxDepth)+" levels reads as the empty schema")
		}
		return
	}
	for _, k := range keys {
		val := obj[k]
		if val == nil {
			w.add(ptr, k, Dropped, "null value, read as absent")
			continue
		}
		name, alias := aliases[k]
		if !alias {
			name = k
		}
		o, reason := classify(name)
		if alias {
			reason = "alias of " + name + ": " + reason
		}
		w.add(ptr, k, o, reason)
	}
	// The subschemas follow, so that a position's keywords stay together.
	for _, k := range keys {
		val := obj[k]
		name, alias := aliases[k]
		if !alias {
			name = k
		}
		if val == nil {
			continue
		}
		if o, _ := classify(name); o == Lost || o == Dropped {
			continue
		}
		sub := ptr + "/" + escape(k)
		switch shapes[name] {
		case one:
			w.walk(val, sub, depth+1)
		case oneList:
			if arr, ok := val.([]any); ok {
				w.walkList(arr, sub, depth)
			} else {
				w.walk(val, sub, depth+1)
			}
		case list:
			if arr, ok := val.([]any); ok {
				w.walkList(arr, sub, depth)
			}
		case named:
			if m, ok := val.(map[string]any); ok {
				names := make([]string, 0, len(m))
				for n := range m {
					names = append(names, n)
				}
				slices.Sort(names)
				for _, n := range names {
					w.walk(m[n], sub+"/"+escape(n), depth+1)
				}
			}
		}
	}
}

func (w *walker) walkList(arr []any, ptr string, depth int) {
	for i, e := range arr {
		w.walk(e, ptr+"/"+strconv.Itoa(i), depth+1)
	}
}

// classify returns the outcome of a keyword by its canonical name.
func classify(name string) (Outcome, string) {
	if k, ok := schema.LookupKeyword(name); ok {
		switch k.Class {
		case schema.Rendered:
			return Carried, k.Note
		case schema.Structural:
			return Consumed, k.Note
		case schema.Ignored:
			return Dropped, k.Note
		}
	}
	if strings.HasPrefix(name, "x-") {
		return Dropped, "specification extension: its meaning is private to the document's tooling"
	}
	return Lost, "not in the keyword table: neither rendered nor reported"
}

// escape encodes a JSON pointer reference token.
func escape(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
