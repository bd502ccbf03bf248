package render

import (
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/adk-codemode/codemode/schema"
)

// Limits on what one schema contributes to a stub.
const (
	// maxNesting is the deepest nested field level a docstring shows.
	maxNesting = 8
	// maxReturnNesting and maxReturnLines bound the fields a Returns
	// section shows: a large API's responses nest deep and wide, and code
	// needs their first levels to use them.
	maxReturnNesting = 3
	maxReturnLines   = 60
	// maxTypeDepth is the deepest level a Python type annotation spells out.
	maxTypeDepth = 8
	// maxLiteral is the largest enum rendered as Literal[...].
	maxLiteral = 64
	// maxLines caps the nested docstring lines of one tool.
	maxLines = 2000
	// maxInline caps an inline description such as not: or if ... then.
	maxInline = 300
	// maxInlineDepth caps nesting inside inline descriptions.
	maxInlineDepth = 3
	// maxProse caps one piece of prose (a description) in runes.
	maxProse = 4000
	// maxListed caps the values listed for enum= and similar.
	maxListed = 20
	// maxFieldVisits caps the schema positions the nested field listing of
	// one tool visits. Union branches, prefixItems slots and items that hold
	// no properties add no lines, so maxLines alone does not bound the walk
	// over a wide, deep union.
	maxFieldVisits = 20000
)

// typeParts returns the parts of n's Python type, to be joined with " | ".
func typeParts(n schema.Node, depth int, budget *int) []string {
	if n.Truncated() || n.Never() || depth > maxTypeDepth || *budget <= 0 {
		return anyParts
	}
	*budget--
	if vals, ok := literalValues(n); ok {
		return []string{"Literal[" + strings.Join(vals, ", ") + "]"}
	}
	var parts []string
	if branches := unionBranches(n); len(branches) > 1 {
		for _, b := range branches {
			parts = append(parts, typeParts(b, depth+1, budget)...)
		}
	} else {
		types := n.Types()
		if len(types) == 0 {
			types = inferType(n)
		}
		for _, t := range types {
			parts = append(parts, scalarType(n, t, depth, budget))
		}
	}
	if len(parts) == 0 {
		parts = anyParts
	}
	if n.Bool("nullable") {
		parts = append(parts, "None")
	}
	return dedupeParts(parts)
}

func dedupeParts(parts []string) []string {
	if len(parts) == 1 {
		if parts[0] == "Any" {
			return anyParts
		}
		return parts
	}
	out := parts[:0:0]
	for _, p := range parts {
		if p == "Any" {
			return anyParts
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// anyParts is the type of a position that says nothing; callers must not
// modify it.
var anyParts = []string{"Any"}

// maxTypeNodes caps the schema positions one annotation visits.
const maxTypeNodes = 256

// nodeType is the Python type annotation of a schema position, and whether
// it already admits None.
type nodeType struct {
	text    string
	hasNone bool
}

// typeOf returns n's Python type annotation and whether it includes None,
// memoised by the identity of n's schema: a self-referencing schema puts
// the same position at many places of one tool.
func (d *describer) typeOf(n schema.Node) nodeType {
	// The annotation reads at most maxTypeDepth levels below n; above
	// MaxDepth positions read as empty, so only shallower positions are
	// independent of their depth.
	memo := n.Depth()+maxTypeDepth < schema.MaxDepth
	if memo {
		if t, ok := d.types[n.ID()]; ok {
			return t
		}
	}
	budget := maxTypeNodes
	parts := typeParts(n, 0, &budget)
	t := nodeType{text: strings.Join(parts, " | "), hasNone: slices.Contains(parts, "None")}
	if memo {
		if d.types == nil {
			d.types = map[schema.NodeID]nodeType{}
		}
		d.types[n.ID()] = t
	}
	return t
}

func subType(n schema.Node, depth int, budget *int) string {
	return strings.Join(typeParts(n, depth, budget), " | ")
}

func inferType(n schema.Node) []string {
	switch {
	case n.Has("properties") || n.Has("additionalProperties") || n.Has("patternProperties"):
		return []string{"object"}
	case n.Has("items") || n.Has("prefixItems"):
		return []string{"array"}
	}
	return nil
}

func scalarType(n schema.Node, t string, depth int, budget *int) string {
	switch t {
	case "string":
		return "str"
	case "integer":
		return "int"
	case "number":
		return "float"
	case "boolean":
		return "bool"
	case "null":
		return "None"
	case "array":
		if slots := n.SubList("prefixItems"); len(slots) > 0 {
			ts := make([]string, len(slots))
			for i, s := range slots {
				ts[i] = subType(s, depth+1, budget)
			}
			return "tuple[" + strings.Join(ts, ", ") + "]"
		}
		if items, ok := n.Sub("items"); ok && !items.Never() {
			return "list[" + subType(items, depth+1, budget) + "]"
		}
		return "list[Any]"
	case "object":
		if ap, ok := n.Get("additionalProperties"); ok && !n.Has("properties") {
			if _, isMap := ap.(map[string]any); isMap {
				sub, _ := n.Sub("additionalProperties")
				return "dict[str, " + subType(sub, depth+1, budget) + "]"
			}
		}
		return "dict[str, Any]"
	}
	return "Any"
}

// literalValues returns the Python reprs of n's enum when it can be a
// Literal: not empty, at most maxLiteral values, all scalars.
func literalValues(n schema.Node) ([]string, bool) {
	raw, ok := n.Get("enum")
	if !ok {
		return nil, false
	}
	arr, ok := raw.([]any)
	if !ok || len(arr) == 0 || len(arr) > maxLiteral {
		return nil, false
	}
	var out []string
	seen := map[string]bool{}
	for _, v := range arr {
		switch v.(type) {
		case map[string]any, []any:
			return nil, false
		}
		r, _ := repr(v)
		if strings.HasPrefix(strings.TrimPrefix(r, "-"), "0x") {
			// An integer too long for a decimal literal: compiling the
			// annotation turns it back into decimal text, which Python
			// refuses, so the values go to the enum= suffix instead.
			return nil, false
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, true
}

// unionBranches returns the branches of n's anyOf, or else its oneOf.
func unionBranches(n schema.Node) []schema.Node {
	if b := n.SubList("anyOf"); len(b) > 0 {
		return b
	}
	return n.SubList("oneOf")
}

// suffixKeys are rendered as k=v, in this order.
var suffixKeys = [...]string{
	"format", "pattern", "minLength", "maxLength", "minimum", "maximum",
	"exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
	"uniqueItems", "minContains", "maxContains", "minProperties", "maxProperties",
	"contentEncoding", "contentMediaType", "const", "example",
}

// suffixRule gives the parts of a suffix that one keyword adds after the
// k=v ones. parts is called only for a position holding the keyword, and
// appends what the keyword shows there, which may be nothing.
type suffixRule struct {
	keyword string
	parts   func(s suffixScope, out []string) []string
}

// suffixRules are the keywords a suffix shows beyond the k=v ones, in the
// order their parts appear. It is the one list of them: scanSuffix marks
// the rules whose keyword a position holds, and otherSuffixParts runs only
// those. init fills it in, because its rules describe subschemas and
// describing a subschema reads it, which a package-level initializer may
// not.
var suffixRules []suffixRule

// suffixKeyInfo maps each of suffixKeys to its position i and each keyword
// of suffixRules to -1-i, i its position there, so that scanSuffix looks a
// keyword up once.
var suffixKeyInfo map[string]int

func init() {
	suffixRules = []suffixRule{
		{"enum", enumPart},
		{"title", titlePart},
		{"examples", examplesPart},
		{"default", defaultPart},
		flagRule("deprecated", "deprecated"),
		flagRule("readOnly", "read-only"),
		flagRule("writeOnly", "write-only"),
		{"additionalProperties", otherKeysPart},
		{"dependentRequired", dependentRequiredPart},
		{"patternProperties", keyPatternsPart},
		{"items", itemsPart},
		subschemaRule("contains", "contains: "),
		subschemaRule("propertyNames", "key names: "),
		{"dependentSchemas", dependentSchemasPart},
		{"if", conditionPart},
		subschemaRule("not", "not: "),
		unevaluatedRule("unevaluatedProperties", "no unevaluated keys", "unevaluated keys: "),
		unevaluatedRule("unevaluatedItems", "no unevaluated items", "unevaluated items: "),
		subschemaRule("contentSchema", "content: "),
	}
	if len(suffixRules) > 32 {
		panic("render: more suffix rules than scanSuffix can mark")
	}
	suffixKeyInfo = make(map[string]int, len(suffixKeys)+len(suffixRules))
	for i, k := range suffixKeys {
		suffixKeyInfo[k] = i
	}
	for i, r := range suffixRules {
		if _, dup := suffixKeyInfo[r.keyword]; dup {
			panic("render: suffix keyword " + r.keyword + " listed twice")
		}
		suffixKeyInfo[r.keyword] = -1 - i
	}
}

// describer renders the docstring parts of one tool. It holds the tool's
// line budget, which bounds the work on self-referencing schemas.
// noOtherKeys is the rule of an object that allows no other properties.
const noOtherKeys = "no other keys"

type describer struct {
	budget int
	// visits counts the calls of fields, against maxFieldVisits.
	visits int
	types  map[schema.NodeID]nodeType
}

// keyValues returns the k=v parts of the first suffix group.
func keyValues(n schema.Node) []string {
	out, _ := scanSuffix(n)
	return out
}

// scanSuffix returns the k=v parts of n, and the set of suffixRules whose
// keyword n holds, bit i for rule i. A position holds a few keywords, so it
// walks them once instead of looking up each of the forty keywords the
// suffix can show.
func scanSuffix(n schema.Node) (kv []string, rules uint32) {
	var values [len(suffixKeys)]any
	var present uint32
	for k, v := range n.All() {
		if i, ok := suffixKeyInfo[k]; ok {
			if i < 0 {
				rules |= 1 << (-1 - i)
				continue
			}
			values[i] = v
			present |= 1 << i
		}
	}
	if present == 0 {
		return nil, rules
	}
	kv = make([]string, 0, bits.OnesCount32(present))
	for i, k := range suffixKeys {
		if present&(1<<i) != 0 {
			kv = append(kv, k+"="+clip(str(values[i]), maxInline))
		}
	}
	return kv, rules
}

// suffixParts returns the constraint suffix of n as its comma-separated
// parts. nested adds default=; name is the name n is shown under, so that a
// title repeating it is left out.
func (d *describer) suffixParts(n schema.Node, nested bool, name string, level int) []string {
	out, rules := scanSuffix(n)
	if rules != 0 {
		out = d.otherSuffixParts(out, n, rules, nested, name, level)
	}
	for _, ref := range n.Unresolved() {
		out = append(out, "unresolved ref "+clip(ref, maxInline))
	}
	return out
}

// otherSuffixParts appends the suffix parts of n after the k=v ones and
// before the unresolved references: those of the suffixRules that rules
// marks, in their order.
func (d *describer) otherSuffixParts(out []string, n schema.Node, rules uint32, nested bool, name string, level int) []string {
	s := suffixScope{d: d, n: n, nested: nested, name: name, level: level}
	for ; rules != 0; rules &= rules - 1 {
		out = suffixRules[bits.TrailingZeros32(rules)].parts(s, out)
	}
	return out
}

// suffixScope is the position a suffix describes, with what its parts
// depend on: whether it is nested (only a nested position shows its
// default), the name it is shown under (a title repeating it is left out)
// and its level (its subschemas are described one level deeper).
type suffixScope struct {
	d      *describer
	n      schema.Node
	nested bool
	name   string
	level  int
}

// inline describes sub, a subschema of the position, on one line.
func (s suffixScope) inline(sub schema.Node) string {
	return s.d.inline(sub, s.level+1)
}

// enumPart lists the enum of a position whose type is not spelled as a
// Literal of its values.
func enumPart(s suffixScope, out []string) []string {
	if _, ok := literalValues(s.n); ok {
		return out
	}
	if raw, has := s.n.Get("enum"); has {
		out = append(out, "enum="+listed(raw))
	}
	return out
}

// titlePart shows the first line of the title, when the position also has
// a description and the title is not its name in other words.
func titlePart(s suffixScope, out []string) []string {
	if t := s.n.String("title"); t != "" && s.n.String("description") != "" && !sameWords(t, s.name) {
		out = append(out, "title="+clip(firstLine(t), maxInline))
	}
	return out
}

// examplesPart shows the first two examples.
func examplesPart(s suffixScope, out []string) []string {
	if ex, ok := s.n.Get("examples"); ok {
		if arr, isArr := ex.([]any); isArr && len(arr) > 0 {
			if len(arr) > 2 {
				arr = arr[:2]
			}
			out = append(out, "examples="+clip(str(arr), maxInline))
		}
	}
	return out
}

// defaultPart shows the default of a nested position; a parameter's
// default is in the signature.
func defaultPart(s suffixScope, out []string) []string {
	if !s.nested {
		return out
	}
	if v, ok := s.n.Get("default"); ok {
		out = append(out, "default="+clip(str(v), maxInline))
	}
	return out
}

// flagRule shows label when the keyword is true.
func flagRule(keyword, label string) suffixRule {
	return suffixRule{keyword, func(s suffixScope, out []string) []string {
		if s.n.Bool(keyword) {
			out = append(out, label)
		}
		return out
	}}
}

// otherKeysPart says what keys an object takes beyond its properties:
// none, or those a schema describes.
func otherKeysPart(s suffixScope, out []string) []string {
	ap, ok := s.n.Get("additionalProperties")
	if !ok {
		return out
	}
	if b, isBool := ap.(bool); isBool && !b {
		out = append(out, noOtherKeys)
	} else if _, isMap := ap.(map[string]any); isMap && s.n.Has("properties") {
		sub, _ := s.n.Sub("additionalProperties")
		out = append(out, "other keys: "+s.inline(sub))
	}
	return out
}

// dependentRequiredPart gives a part for each key that requires others, in
// key order.
func dependentRequiredPart(s suffixScope, out []string) []string {
	if dr, ok := s.n.Get("dependentRequired"); ok {
		if m, isMap := dr.(map[string]any); isMap {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				out = append(out, k+" requires "+strings.Join(stringsOf(m[k]), ", "))
			}
		}
	}
	return out
}

// keyPatternsPart lists the key patterns, each with what its values must
// be unless that is anything.
func keyPatternsPart(s suffixScope, out []string) []string {
	pats := s.n.SubSorted("patternProperties")
	if len(pats) == 0 {
		return out
	}
	ps := make([]string, 0, len(pats))
	for _, p := range pats {
		if t := s.inline(p.Node); t != "any value" {
			ps = append(ps, p.Name+": "+t)
		} else {
			ps = append(ps, p.Name)
		}
	}
	return append(out, "key patterns: "+strings.Join(ps, ", "))
}

// itemsPart shows the constraints of a list's items, whose type the
// annotation already gives; after prefixItems, it says what the items
// beyond the prefix may be.
func itemsPart(s suffixScope, out []string) []string {
	items, ok := s.n.Sub("items")
	switch {
	case !ok:
	case !s.n.Has("prefixItems"):
		if kv := keyValues(items); len(kv) > 0 {
			out = append(out, "items: "+strings.Join(kv, ", "))
		}
	case items.Never():
		out = append(out, "no extra items")
	default:
		out = append(out, "extra items: "+s.inline(items))
	}
	return out
}

// subschemaRule describes the keyword's subschema inline after prefix.
func subschemaRule(keyword, prefix string) suffixRule {
	return suffixRule{keyword, func(s suffixScope, out []string) []string {
		if sub, ok := s.n.Sub(keyword); ok {
			out = append(out, prefix+s.inline(sub))
		}
		return out
	}}
}

// dependentSchemasPart gives a part for each key that brings a schema, in
// key order.
func dependentSchemasPart(s suffixScope, out []string) []string {
	for _, ds := range s.n.SubSorted("dependentSchemas") {
		out = append(out, "with "+ds.Name+": "+s.inline(ds.Node))
	}
	return out
}

// conditionPart writes if, then and else as one part.
func conditionPart(s suffixScope, out []string) []string {
	cond, ok := s.n.Sub("if")
	if !ok {
		return out
	}
	part := "if " + s.inline(cond)
	if then, has := s.n.Sub("then"); has {
		part += " then " + s.inline(then)
	}
	if els, has := s.n.Sub("else"); has {
		part += " else " + s.inline(els)
	}
	return append(out, part)
}

// unevaluatedRule shows none when the keyword is false, and otherwise
// describes its subschema after prefix unless it is empty.
func unevaluatedRule(keyword, none, prefix string) suffixRule {
	return suffixRule{keyword, func(s suffixScope, out []string) []string {
		v, ok := s.n.Get(keyword)
		if !ok {
			return out
		}
		if b, isBool := v.(bool); isBool && !b {
			out = append(out, none)
		} else if sub, isSchema := s.n.Sub(keyword); isSchema && !sub.Empty() {
			out = append(out, prefix+s.inline(sub))
		}
		return out
	}}
}

// suffix wraps the parts in " (...)", or returns "" when there are none.
func suffix(parts []string) string {
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// writeSuffix writes suffix(parts) to sb.
func writeSuffix(sb *strings.Builder, parts []string) {
	if len(parts) == 0 {
		return
	}
	sb.WriteString(" (")
	for i, p := range parts {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(p)
	}
	sb.WriteByte(')')
}

// inline describes a subschema on one line: its type, then its constraints,
// its properties and its required list.
func (d *describer) inline(n schema.Node, level int) string {
	if n.Never() {
		return "nothing"
	}
	if level > maxInlineDepth || d.budget <= 0 {
		return "..."
	}
	d.budget--
	rest := d.suffixParts(n, true, "", level)
	if props := n.SubSorted("properties"); len(props) > 0 {
		ps := make([]string, 0, min(len(props), maxListed+1))
		for i, p := range props {
			if i == maxListed {
				ps = append(ps, "...")
				break
			}
			ps = append(ps, p.Name+": "+d.inline(p.Node, level+1))
		}
		rest = append(rest, "{"+strings.Join(ps, ", ")+"}")
	}
	if req := n.Strings("required"); len(req) > 0 {
		rest = append(rest, "required: "+strings.Join(req, ", "))
	}
	if desc := firstLine(prose(n)); desc != "" {
		rest = append([]string{clip(desc, 80)}, rest...)
	}
	t := d.typeOf(n).text
	var s string
	switch {
	case t != "Any" && len(rest) > 0:
		s = t + " (" + strings.Join(rest, ", ") + ")"
	case t != "Any":
		s = t
	case len(rest) > 0:
		s = strings.Join(rest, ", ")
	default:
		s = "any value"
	}
	return clip(s, maxInline)
}

// prose is a schema's description, else its title.
func prose(n schema.Node) string {
	if s := n.String("description"); s != "" {
		return clip(s, maxProse)
	}
	return clip(n.String("title"), maxProse)
}

func firstLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return strings.TrimSpace(s)
	}
	for _, l := range lines(s) {
		if strings.TrimSpace(l) != "" {
			return strings.TrimSpace(l)
		}
	}
	return ""
}

// restLines returns the lines of s after its first non-blank line, with
// leading and trailing blank lines removed.
func restLines(s string) []string {
	if !strings.ContainsAny(s, "\r\n") {
		return nil
	}
	ls := lines(s)
	for i, l := range ls {
		if strings.TrimSpace(l) != "" {
			ls = ls[i+1:]
			break
		}
	}
	for len(ls) > 0 && strings.TrimSpace(ls[0]) == "" {
		ls = ls[1:]
	}
	for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}

// fields appends the nested field lines of n at indent. extraRequired holds
// the parent's required names, which apply to union branches too.
func (d *describer) fields(out []string, n schema.Node, indent, depth int, extraRequired []string) []string {
	if depth >= maxNesting || n.Truncated() || d.visits >= maxFieldVisits {
		return out
	}
	d.visits++
	pad := spaces(indent)
	// required is sorted and free of duplicates.
	required := append(n.Strings("required"), extraRequired...)
	slices.Sort(required)
	required = slices.Compact(required)
	for _, prop := range n.SubSorted("properties") {
		if d.budget <= 0 {
			return append(out, pad+"...")
		}
		d.budget--
		name, p := prop.Name, prop.Node
		text := prose(p)
		first := firstLine(text)
		var line strings.Builder
		line.Grow(len(pad) + len(name) + len(first) + 64)
		line.WriteString(pad)
		line.WriteString(name)
		line.WriteString(": ")
		line.WriteString(d.typeOf(p).text)
		if _, ok := slices.BinarySearch(required, name); ok {
			line.WriteString(" (required)")
		}
		if first != "" {
			line.WriteString(" - ")
			line.WriteString(first)
		}
		writeSuffix(&line, d.suffixParts(p, true, name, 0))
		out = append(out, line.String())
		for _, l := range restLines(text) {
			out = append(out, strings.TrimRight(pad+"    "+l, " "))
		}
		out = d.fields(out, p, indent+4, depth+1, nil)
	}
	if branches := unionBranches(n); len(branches) > 1 {
		disc := discriminator(n)
		first := true
		for _, b := range branches {
			if d.budget <= 0 {
				break
			}
			inner := d.fields(nil, b, indent, depth+1, required)
			if len(inner) == 0 {
				continue
			}
			if !first {
				out = append(out, pad+"-- or --")
			}
			first = false
			if h := branchHeader(d, b, disc); h != "" {
				out = append(out, pad+h)
			}
			out = append(out, inner...)
		}
	}
	for i, slot := range n.SubList("prefixItems") {
		inner := d.fields(nil, slot, indent+4, depth+1, nil)
		if len(inner) == 0 {
			continue
		}
		out = append(out, pad+"["+itoa(i)+"]: "+d.typeOf(slot).text)
		out = append(out, inner...)
	}
	if items, ok := n.Sub("items"); ok {
		out = d.fields(out, items, indent, depth+1, nil)
	}
	if ap, ok := n.Sub("additionalProperties"); ok && !n.Has("properties") {
		if inner := d.fields(nil, ap, indent+4, depth+1, nil); len(inner) > 0 {
			out = append(out, pad+"<key>: "+d.typeOf(ap).text)
			out = append(out, inner...)
		}
	}
	return out
}

// blanks backs spaces for the usual indents.
const blanks = "                                                                "

// spaces returns n spaces.
func spaces(n int) string {
	if n <= len(blanks) {
		return blanks[:n]
	}
	return strings.Repeat(" ", n)
}

// branchHeader is "(tag) - prose (suffix)", or without the tag "prose
// (suffix)", or the bare suffix.
func branchHeader(d *describer, b schema.Node, disc string) string {
	tag := branchTag(b, disc)
	text := firstLine(prose(b))
	parts := d.suffixParts(b, true, "", 0)
	switch {
	case tag != "":
		h := "(" + tag + ")"
		if text != "" {
			h += " - " + text
		}
		return h + suffix(parts)
	case text != "":
		return text + suffix(parts)
	}
	return strings.TrimSpace(suffix(parts))
}

func discriminator(n schema.Node) string {
	if m, ok := n.Get("discriminator"); ok {
		if mm, isMap := m.(map[string]any); isMap {
			if s, isStr := mm["propertyName"].(string); isStr {
				return s
			}
		}
	}
	return ""
}

// branchTag reads a union branch's tag from the discriminator property, else
// from its "type" property: a const, or an enum of one value.
func branchTag(b schema.Node, disc string) string {
	props := b.SubSorted("properties")
	for _, key := range [2]string{disc, "type"} {
		if key == "" {
			continue
		}
		i, ok := slices.BinarySearchFunc(props, key, func(p schema.Named, k string) int { return strings.Compare(p.Name, k) })
		if !ok {
			continue
		}
		p := props[i].Node
		if c, has := p.Get("const"); has {
			return str(c)
		}
		if e, has := p.Get("enum"); has {
			if arr, isArr := e.([]any); isArr && len(arr) == 1 {
				return str(arr[0])
			}
		}
	}
	return ""
}

func listed(raw any) string {
	arr, ok := raw.([]any)
	if !ok {
		return clip(str(raw), maxInline)
	}
	if len(arr) > maxListed {
		more := len(arr) - maxListed
		s := clip(str(arr[:maxListed]), maxInline*4)
		return strings.TrimSuffix(s, "]") + ", ... " + itoa(more) + " more]"
	}
	return clip(str(arr), maxInline*4)
}

func stringsOf(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// sameWords reports whether a title merely restates a name, as generated
// titles do ("User Id" for user_id).
func sameWords(title, name string) bool {
	norm := func(s string) string {
		var sb strings.Builder
		for _, r := range strings.ToLower(s) {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				sb.WriteRune(r)
			}
		}
		return sb.String()
	}
	return name != "" && norm(title) == norm(name)
}

func itoa(i int) string { return strconv.Itoa(i) }
