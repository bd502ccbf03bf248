package render

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/schema"
)

// File is one generated file of the tools package.
type File struct {
	// Path is relative to the directory put on sys.path, such as
	// "tools/slack/send_message.py".
	Path string
	// Content is the file's Python source.
	Content string
}

// RuntimeModule is the module the sandbox injects before user code runs;
// generated stubs call tools through its call function.
const RuntimeModule = "codemode_runtime"

// summaryWidth is the column at which docstring summaries wrap.
const summaryWidth = 88

// renderedTool holds the parts shared by a tool's stub file and its catalog
// entry.
type renderedTool struct {
	stubSig     string // def line of the stub file
	catalogSig  string // def line of the catalog entry
	docstring   string // the indented docstring, ending in a newline
	body        string // the stub's body after the docstring
	hasOptional bool
}

func (r *Registry) render() []renderedTool {
	r.once.Do(func() {
		r.rendered = make([]renderedTool, len(r.entries))
		// Tools render independently; spread them over the CPUs.
		shared := r.sharedNames()
		parallel(len(r.entries), func(i int) {
			r.rendered[i] = renderTool(r.entries[i], r.docs[i], r.resps[i], r.params[i], shared)
		})
	})
	return r.rendered
}

func renderTool(e Entry, doc, resp *schema.Document, params []param, shared map[string]string) renderedTool {
	d := &describer{budget: maxLines}
	ret := returnType(d, resp, e.ResultKey)
	var rt renderedTool
	stubArgs := make([]string, 0, len(params))
	catArgs := make([]string, 0, len(params))
	for _, p := range params {
		t := d.typeOf(p.node)
		typ := t.text
		if p.required {
			arg := p.ident + ": " + typ
			if v, ok := p.node.Get("default"); ok {
				if text, exact := repr(v); exact {
					arg += " = " + text
				}
			}
			stubArgs = append(stubArgs, arg)
			catArgs = append(catArgs, arg)
			continue
		}
		rt.hasOptional = true
		if !t.hasNone {
			typ += " | None"
		}
		stubArgs = append(stubArgs, p.ident+": "+typ+" = _MISSING")
		if !isShared(shared, p) {
			// The block describes a shared parameter once, for every
			// tool that takes it; the stub file keeps it.
			catArgs = append(catArgs, p.ident+": "+typ+" = ...")
		}
	}
	rt.stubSig = signature(e.Attr, stubArgs, ret)
	rt.catalogSig = signature(e.Attr, catArgs, ret)
	documented := params
	if len(shared) > 0 {
		documented = slices.DeleteFunc(slices.Clone(params), func(p param) bool { return isShared(shared, p) })
	}
	rt.docstring = docstring(d, e, doc.Root(), documented, resp)

	var body strings.Builder
	body.Grow(64 + 96*len(params))
	if len(params) == 0 {
		body.WriteString("    return _call(" + strRepr(e.Path) + ", {})\n")
	} else {
		var req []string
		for _, p := range params {
			if p.required {
				req = append(req, strRepr(p.raw)+": "+p.ident)
			}
		}
		body.WriteString("    _args: dict[str, Any] = {" + strings.Join(req, ", ") + "}\n")
		for _, p := range params {
			if !p.required {
				body.WriteString("    if " + p.ident + " is not _MISSING:\n")
				body.WriteString("        _args[" + strRepr(p.raw) + "] = " + p.ident + "\n")
			}
		}
		body.WriteString("    return _call(" + strRepr(e.Path) + ", _args)\n")
	}
	rt.body = body.String()
	return rt
}

func signature(name string, args []string, ret string) string {
	if len(args) == 0 {
		return "def " + name + "() -> " + ret + ":"
	}
	return "def " + name + "(*, " + strings.Join(args, ", ") + ") -> " + ret + ":"
}

// returnType is the return annotation of a tool whose result has the
// schema resp (nil when none is declared) and reaches code as {key: result}
// when key is not "": the result's type, or dict[str, T] for the wrapper;
// Any without a schema.
func returnType(d *describer, resp *schema.Document, key string) string {
	if resp == nil {
		return "Any"
	}
	t := d.typeOf(resp.Root()).text
	if key != "" {
		return "dict[str, " + t + "]"
	}
	return t
}

// returnLines lays out the Returns section in the style of Args: the type
// (inside the wrapper {key: T} when key is not ""), the first prose line
// and the constraint suffix, further prose, then the result's fields. A
// type line that would only repeat the return annotation is left out, the
// fields then under Returns itself; so is the whole section when it would
// say nothing more. "no other keys" is not said of a result: code reads
// the keys it knows.
func returnLines(d *describer, resp *schema.Document, key string) []string {
	if resp == nil && key == "" {
		return nil
	}
	t, head, rules := "Any", "", ""
	var rest []string
	var root schema.Node
	if resp != nil {
		root = resp.Root()
		t = d.typeOf(root).text
		text := prose(root)
		head = firstLine(text)
		rules = suffix(slices.DeleteFunc(d.suffixParts(root, false, "", 0), func(p string) bool { return p == noOtherKeys }))
		rest = restLines(text)
	}
	fields := func(indent int) []string {
		if resp == nil {
			return nil
		}
		// A result is read, not built: its fields are shown to
		// maxReturnNesting levels and maxReturnLines lines (the walk starts
		// that many levels above fields' own limit).
		budget := d.budget
		d.budget = min(budget, maxReturnLines)
		// A list's item fields come under a line that says so: they are
		// the fields of each item, not of the list.
		node, depth, lead := root, maxNesting-maxReturnNesting, ""
		if items, ok := root.Sub("items"); ok && !root.Has("properties") {
			node, depth, lead = items, depth+1, spaces(indent)+"each item:"
			indent += 4
		}
		out := d.fields(nil, node, indent, depth, nil)
		d.budget = budget - (min(budget, maxReturnLines) - d.budget)
		if lead != "" && len(out) > 0 {
			out = append([]string{lead}, out...)
		}
		return out
	}
	if key == "" && head == "" && rules == "" && len(rest) == 0 {
		return fields(4) // nil: the return annotation says it all
	}
	line := "    " + t
	if key != "" {
		line = "    {" + strRepr(key) + ": " + t + "}"
	}
	if head != "" {
		line += " - " + head
	}
	out := []string{line + rules}
	for _, l := range rest {
		out = append(out, strings.TrimRight("        "+l, " "))
	}
	return append(out, fields(8)...)
}

// docstring lays out a tool's docstring: the wrapped summary, the Args
// section with nested fields, a Constraints section for rules on the
// arguments object as a whole, and the Returns section of a declared
// result. The result comes last in the line budget too.
func docstring(d *describer, e Entry, root schema.Node, params []param, resp *schema.Document) string {
	var body []string
	body = append(body, wrap(summaryText(e, func() schema.Node { return root }), summaryWidth)...)
	if rd := root.String("description"); rd != "" && strings.TrimSpace(rd) != strings.TrimSpace(e.Declaration.Description) && strings.TrimSpace(e.Declaration.Description) != "" {
		body = append(body, "")
		body = append(body, wrap(clip(rd, maxProse), summaryWidth)...)
	}
	if len(params) > 0 {
		body = append(body, "", "Args:")
		for _, p := range params {
			text := prose(p.node)
			if t := p.node.String("title"); p.node.String("description") == "" && sameWords(t, p.raw) {
				text = ""
			}
			head := firstLine(text) + suffix(d.suffixParts(p.node, false, p.raw, 0))
			if !p.required {
				if v, ok := p.node.Get("default"); ok {
					text, _ := repr(v)
					head += " (default: " + clip(text, maxInline) + ")"
				}
			}
			head = strings.TrimSpace(head)
			line := "    " + p.ident + ":"
			if head != "" {
				line += " " + head
			}
			body = append(body, line)
			for _, l := range restLines(text) {
				body = append(body, strings.TrimRight("        "+l, " "))
			}
			body = d.fields(body, p.node, 8, 1, nil)
		}
	}
	if cons := rootConstraints(d, root); len(cons) > 0 {
		body = append(body, "", "Constraints:")
		body = append(body, cons...)
	}
	if ret := returnLines(d, resp, e.ResultKey); len(ret) > 0 {
		body = append(body, "", "Returns:")
		body = append(body, ret...)
	}
	return docBlock(body)
}

// summaryText is a tool's summary: the declaration's description, else
// the prose of the parameter schema that root returns, else a fixed
// sentence.
func summaryText(e Entry, root func() schema.Node) string {
	summary := clip(e.Declaration.Description, maxProse*2)
	if strings.TrimSpace(summary) == "" {
		summary = prose(root())
	}
	if strings.TrimSpace(summary) == "" {
		summary = "Call the tool."
	}
	return summary
}

// summaries returns the one-line docstring of each tool, for the
// signatures tier.
func (r *Registry) summaries() []string {
	plain := r.plainSummaries()
	out := make([]string, len(r.entries))
	parallel(len(r.entries), func(i int) {
		out[i] = quoteSummary(plain[i])
	})
	return out
}

// plainSummaries returns the one-line summary of each tool as plain text,
// computed once.
func (r *Registry) plainSummaries() []string {
	r.plainOnce.Do(func() {
		r.plain = make([]string, len(r.entries))
		parallel(len(r.entries), func(i int) {
			r.plain[i] = summaryPlain(r.entries[i], r.docs[i].Root)
		})
	})
	return r.plain
}

// maxSummaryLine caps the one-line summary of the signatures tier, in runes.
const maxSummaryLine = 160

// quoteSummary lays out a one-line summary as an indented docstring.
func quoteSummary(s string) string {
	raw := strings.ContainsRune(s, '\\')
	var sb strings.Builder
	sb.Grow(len(s) + 12)
	sb.WriteString("    ")
	if raw {
		sb.WriteByte('r')
	}
	sb.WriteString(`"""`)
	writeDocText(&sb, s, raw)
	if strings.HasSuffix(s, `"`) || strings.HasSuffix(s, "\\") {
		// Neither may touch the closing quotes.
		sb.WriteByte(' ')
	}
	sb.WriteString(`"""` + "\n")
	return sb.String()
}

// summaryPlain is the one-line summary of a tool as plain text: the first
// sentence of its summary, cut at a word to maxSummaryLine runes.
func summaryPlain(e Entry, root func() schema.Node) string {
	s := summaryText(e, root)
	if !simpleLine(s, len(s)) {
		var para []string
		for _, l := range lines(s) {
			if strings.TrimSpace(l) == "" {
				if len(para) > 0 {
					break
				}
				continue
			}
			if len(para) > 0 && listMarker(strings.TrimSpace(l)) > 0 {
				break
			}
			para = append(para, l)
		}
		s = strings.Join(strings.Fields(strings.Join(para, " ")), " ")
	}
	for i := 0; i+1 < len(s); i++ {
		if (s[i] == '.' || s[i] == '!' || s[i] == '?') && s[i+1] == ' ' {
			s = s[:i+1]
			break
		}
	}
	if utf8.RuneCountInString(s) > maxSummaryLine {
		r := []rune(s)[:maxSummaryLine]
		cut := string(r)
		if sp := strings.LastIndexByte(cut, ' '); sp > maxSummaryLine/2 {
			cut = cut[:sp]
		}
		s = cut + " [...]"
	}
	return s
}

// docBlock lays out docstring lines as the indented, quoted docstring.
func docBlock(body []string) string {
	raw := false
	for _, l := range body {
		if strings.ContainsRune(l, '\\') {
			raw = true
			break
		}
	}
	size := 16
	for _, l := range body {
		size += len(l) + 5
	}
	var sb strings.Builder
	sb.Grow(size)
	sb.WriteString("    ")
	if raw {
		sb.WriteByte('r')
	}
	sb.WriteString(`"""`)
	for i, l := range body {
		if i > 0 {
			sb.WriteString("\n")
			if l != "" {
				// Blank lines stay empty: no trailing whitespace.
				sb.WriteString("    ")
			}
		}
		writeDocText(&sb, l, raw)
	}
	sb.WriteString("\n    \"\"\"\n")
	return sb.String()
}

// rootConstraints renders the rules on the arguments object itself: its
// constraint suffix and, for a root-level union, the accepted argument sets.
func rootConstraints(d *describer, root schema.Node) []string {
	var out []string
	// The signature is keyword-only, so Python itself refuses an argument
	// it does not name: "no other keys" would tell the model nothing.
	parts := slices.DeleteFunc(d.suffixParts(root, false, "", 0), func(p string) bool { return p == noOtherKeys })
	if len(parts) > 0 {
		out = append(out, "    "+strings.Join(parts, ", "))
	}
	if branches := unionBranches(root); len(branches) > 1 {
		kind := "any of"
		if len(root.SubList("anyOf")) == 0 {
			kind = "exactly one of"
		}
		out = append(out, "    arguments match "+kind+":")
		for _, b := range branches {
			out = append(out, "        - "+d.inline(b, 1))
		}
	}
	return out
}

const header = "# Generated by codemode from the tool declarations. Do not edit.\n"

// Stubs returns the files of the tools package, sorted by path: one module
// per tool, an __init__.py per namespace re-exporting its tools, and the root
// __init__.py re-exporting ToolError, HTTPStatusError, ToolDeniedError,
// BudgetExceeded and the top-level tools, and the files behind search and
// describe: DiscoveryFile, which
// defines them over the DiscoveryIndex and DiscoveryDocs files. The root
// re-exports them too unless a tool or namespace takes their names (see
// [Registry.Discovery]).
func (r *Registry) Stubs() []File {
	r.stubsOnce.Do(func() {
		rendered := r.render()
		// The search index does not depend on the stub files: build it
		// meanwhile, so that its serial steps overlap theirs.
		discovery := make(chan []File, 1)
		go func() { discovery <- r.discoveryFiles() }()
		files := make([]File, len(r.entries), len(r.entries)+len(r.Namespaces())+4)
		// Stub files are independent; spread them over the CPUs.
		parallel(len(r.entries), func(i int) {
			e, rt := r.entries[i], rendered[i]
			var sb strings.Builder
			sb.Grow(len(header) + 160 + len(rt.stubSig) + len(rt.docstring) + len(rt.body))
			sb.WriteString(header)
			sb.WriteString("from __future__ import annotations\n\n")
			sb.WriteString("from typing import Any, Literal\n\n")
			sb.WriteString("from " + RuntimeModule + " import call as _call\n")
			if rt.hasOptional {
				sb.WriteString("\n_MISSING = object()\n")
			}
			sb.WriteString("\n\n")
			sb.WriteString(rt.stubSig + "\n")
			sb.WriteString(rt.docstring)
			sb.WriteString(rt.body)
			dir := "tools/"
			if e.Package != "" {
				dir += e.Package + "/"
			}
			files[i] = File{Path: dir + e.Attr + ".py", Content: sb.String()}
		})
		byPkg := map[string][]string{}
		for _, e := range r.entries {
			byPkg[e.Package] = append(byPkg[e.Package], e.Attr)
		}
		for pkg, attrs := range byPkg {
			if pkg == "" {
				continue
			}
			files = append(files, File{Path: "tools/" + pkg + "/__init__.py", Content: initFile(nil, false, attrs)})
		}
		files = append(files, <-discovery...)
		top := r.Discovery() == "tools"
		files = append(files, File{Path: "tools/__init__.py", Content: initFile([]string{"BudgetExceeded", "HTTPStatusError", "ToolDeniedError", "ToolError"}, top, byPkg[""])})
		sortFiles(files)
		r.stubs = files
	})
	return append([]File(nil), r.stubs...)
}

// initFile is a package's __init__.py: it re-exports runtime from the
// runtime module, search and describe when discovery is set, and the tool
// modules attrs.
func initFile(runtime []string, discovery bool, attrs []string) string {
	var sb strings.Builder
	sb.WriteString(header)
	all := append([]string(nil), runtime...)
	if len(runtime) > 0 {
		sb.WriteString("from " + RuntimeModule + " import " + strings.Join(runtime, ", ") + "\n")
	}
	if discovery {
		sb.WriteString("from ._discovery import describe, search\n")
		all = append(all, "describe", "search")
	}
	if len(attrs) > 0 {
		sb.WriteString("\n")
	}
	for _, a := range attrs {
		sb.WriteString("from ." + a + " import " + a + "\n")
		all = append(all, a)
	}
	quoted := make([]string, len(all))
	for i, a := range all {
		quoted[i] = strRepr(a)
	}
	sb.WriteString("\n__all__ = [" + strings.Join(quoted, ", ") + "]\n")
	return sb.String()
}

func sortFiles(files []File) {
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
}
