package render

import (
	"slices"
	"strings"

	"github.com/adk-codemode/codemode/schema"
)

// Page is one Markdown file of the catalog docs.
type Page struct {
	// Path is relative to the output directory, such as "tools.slack.md".
	Path string
	// Content is the page's Markdown.
	Content string
}

// IndexPage is the path of the index among [Registry.MarkdownPages].
const IndexPage = "index.md"

// Markdown returns the catalog as one Markdown document: a table of
// contents, then a section per module and a subsection per tool with its
// Python signature, a parameter table and its return type where one is
// declared. Every module and tool has an explicit anchor (see
// [ModuleAnchor], [ToolAnchor]). The output is byte-stable.
func (r *Registry) Markdown() string {
	var sb strings.Builder
	sb.WriteString("# Tool catalog\n\n## Contents\n\n")
	r.contents(&sb, func(int) string { return "" })
	for s, b := 0, r.sectionBounds(); s+1 < len(b); s++ {
		sb.WriteString("\n")
		r.module(&sb, b[s], b[s+1], 2)
	}
	return sb.String()
}

// MarkdownPages returns the catalog as one page per module, tools.md for
// the top-level tools and tools.<namespace>.md for each namespace, plus
// IndexPage, which links to every module and tool. Pages are sorted by
// path; their content is that of [Registry.Markdown], split.
func (r *Registry) MarkdownPages() []Page {
	bounds := r.sectionBounds()
	pages := make([]Page, 0, len(bounds))
	var idx strings.Builder
	idx.WriteString("# Tool catalog\n\n")
	r.contents(&idx, func(i int) string { return pageOf(r.entries[i]) })
	pages = append(pages, Page{Path: IndexPage, Content: idx.String()})
	for s := 0; s+1 < len(bounds); s++ {
		var sb strings.Builder
		r.module(&sb, bounds[s], bounds[s+1], 1)
		pages = append(pages, Page{Path: pageOf(r.entries[bounds[s]]), Content: sb.String()})
	}
	sortPages(pages)
	return pages
}

func sortPages(pages []Page) {
	for i := 1; i < len(pages); i++ {
		for j := i; j > 0 && pages[j].Path < pages[j-1].Path; j-- {
			pages[j], pages[j-1] = pages[j-1], pages[j]
		}
	}
}

// moduleOf is the Python module that holds e.
func moduleOf(e Entry) string {
	if e.Package == "" {
		return "tools"
	}
	return "tools." + e.Package
}

func pageOf(e Entry) string { return moduleOf(e) + ".md" }

// ModuleAnchor is the anchor of a module's section: "module-tools" for the
// top level, "module-tools-slack" for namespace slack. Python identifiers
// hold no "-", so anchors never collide.
func ModuleAnchor(module string) string {
	return "module-" + strings.ReplaceAll(module, ".", "-")
}

// ToolAnchor is the anchor of a tool's section: "tool-slack-send_message"
// for the dotted path slack.send_message.
func ToolAnchor(path string) string {
	return "tool-" + strings.ReplaceAll(path, ".", "-")
}

// contents writes the table of contents; page(i) is the file that holds
// entry i, "" for this one.
func (r *Registry) contents(sb *strings.Builder, page func(int) string) {
	bounds := r.sectionBounds()
	for s := 0; s+1 < len(bounds); s++ {
		start, end := bounds[s], bounds[s+1]
		m := moduleOf(r.entries[start])
		sb.WriteString("- [`" + m + "`](" + page(start) + "#" + ModuleAnchor(m) + ")\n")
		for i := start; i < end; i++ {
			e := r.entries[i]
			sb.WriteString("  - [`" + e.Path + "`](" + page(i) + "#" + ToolAnchor(e.Path) + ")")
			if s := summaryText(e, func() schema.Node { return r.docs[i].Root() }); s != "" {
				sb.WriteString(": " + mdText(firstLine(s)))
			}
			sb.WriteString("\n")
		}
	}
}

// codeFence returns a fence for a code block holding s: three backticks,
// or more than the longest run of them in s.
func codeFence(s string) string {
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// maxExamplesShown caps the examples of one parameter in its table cell.
const maxExamplesShown = 3

// examplesOf returns the example values a parameter's schema declares:
// those of JSON Schema's examples, then OpenAPI's example.
func examplesOf(n schema.Node) []any {
	var out []any
	if v, ok := n.Get("examples"); ok {
		if arr, isArr := v.([]any); isArr {
			out = append(out, arr...)
		}
	}
	if v, ok := n.Get("example"); ok {
		out = append(out, v)
	}
	return out
}

// exampleCell writes examples as code spans of their Python values, at
// most maxExamplesShown of them.
func exampleCell(examples []any) string {
	var parts []string
	for k, v := range examples {
		if k == maxExamplesShown {
			parts = append(parts, "...")
			break
		}
		text, _ := repr(v)
		parts = append(parts, codeSpan(clip(text, maxInline)))
	}
	return strings.Join(parts, ", ")
}

// exampleCall returns a call of e built only from what its parameters
// declare: each required parameter takes its first example, else its
// default, and each optional one its first example, if it has one. There
// is no call when a required parameter declares neither, when no argument
// has a value, or when a value has no exact Python form of at most
// maxInline characters; values are never made up.
func exampleCall(e Entry, ps []param) (string, bool) {
	var args []string
	for _, p := range ps {
		var v any
		ex := examplesOf(p.node)
		switch {
		case len(ex) > 0:
			v = ex[0]
		case p.required:
			def, ok := p.node.Get("default")
			if !ok {
				return "", false
			}
			v = def
		default:
			continue
		}
		text, exact := repr(v)
		if !exact || len(text) > maxInline {
			if p.required {
				return "", false
			}
			continue
		}
		args = append(args, p.ident+"="+text)
	}
	if len(args) == 0 {
		return "", false
	}
	return e.Attr + "(" + strings.Join(args, ", ") + ")", true
}

// module writes the section of the tools from start to end, one module,
// with its heading at level.
func (r *Registry) module(sb *strings.Builder, start, end, level int) {
	rendered := r.render()
	m := moduleOf(r.entries[start])
	h := strings.Repeat("#", level)
	sb.WriteString("<a id=\"" + ModuleAnchor(m) + "\"></a>\n\n" + h + " `" + m + "`\n\n")
	sb.WriteString("```python\nfrom " + m + " import ")
	for i, e := range r.entries[start:end] {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(e.Attr)
	}
	sb.WriteString("\n```\n")
	for i := start; i < end; i++ {
		e := r.entries[i]
		sb.WriteString("\n<a id=\"" + ToolAnchor(e.Path) + "\"></a>\n\n" + h + "# `" + e.Path + "`\n\n")
		if paras := paragraphs(e.Declaration.Description); len(paras) > 0 {
			for _, p := range paras {
				sb.WriteString(mdText(p) + "\n\n")
			}
		}
		sb.WriteString("```python\n" + rendered[i].catalogSig + " ...\n```\n")
		d := &describer{budget: maxLines}
		if ps := r.params[i]; len(ps) > 0 {
			// An examples column only where some parameter declares
			// examples; they then leave the constraints column.
			withExamples := slices.ContainsFunc(ps, func(p param) bool { return len(examplesOf(p.node)) > 0 })
			sb.WriteString("\n| name | type | required | constraints | default | description |")
			if withExamples {
				sb.WriteString(" examples |\n|---|---|---|---|---|---|---|\n")
			} else {
				sb.WriteString("\n|---|---|---|---|---|---|\n")
			}
			for _, p := range ps {
				req := "no"
				if p.required {
					req = "yes"
				}
				def := ""
				if v, ok := p.node.Get("default"); ok {
					text, _ := repr(v)
					def = codeSpan(clip(text, maxInline))
				}
				cons := d.suffixParts(p.node, false, p.raw, 0)
				if withExamples {
					cons = slices.DeleteFunc(slices.Clone(cons), func(c string) bool {
						return strings.HasPrefix(c, "examples=") || strings.HasPrefix(c, "example=")
					})
				}
				sb.WriteString("| " + codeSpan(p.raw) + " | " + codeSpan(d.typeOf(p.node).text) + " | " + req +
					" | " + mdText(strings.Join(cons, ", ")) +
					" | " + def + " | " + mdText(oneLine(prose(p.node))) + " |")
				if withExamples {
					sb.WriteString(" " + exampleCell(examplesOf(p.node)) + " |")
				}
				sb.WriteString("\n")
			}
		}
		if r.resps[i] != nil || e.ResultKey != "" {
			sb.WriteString("\nReturns " + codeSpan(returnType(d, r.resps[i], e.ResultKey)))
			if r.resps[i] != nil {
				if s := firstLine(prose(r.resps[i].Root())); s != "" {
					sb.WriteString(": " + mdText(s))
				}
			}
			sb.WriteString("\n")
		}
		if call, ok := exampleCall(e, r.params[i]); ok {
			fence := codeFence(call)
			sb.WriteString("\nExample call:\n\n" + fence + "python\n" + call + "\n" + fence + "\n")
		}
	}
}

// paragraphs splits s at blank lines and joins each paragraph's lines.
func paragraphs(s string) []string {
	var out, cur []string
	for _, l := range lines(s) {
		if l = strings.TrimSpace(l); l == "" {
			if len(cur) > 0 {
				out = append(out, strings.Join(cur, " "))
				cur = nil
			}
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, strings.Join(cur, " "))
	}
	return out
}

// mdText escapes s as inline Markdown text on one line, safe in a table
// cell and at the start of a paragraph: the characters that could start
// inline markup are backslash-escaped, and so is a leading character that
// could start a block (a heading, a list item, a quote).
func mdText(s string) string {
	var sb strings.Builder
	sb.Grow(len(s) + 8)
	lead := true // within the leading digits of the text
	for i, c := range s {
		switch c {
		case '\n', '\r', '\t':
			sb.WriteByte(' ')
			lead = false
			continue
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '&', '~', '!':
			sb.WriteByte('\\')
		case '#', '-', '+', '=':
			if i == 0 {
				sb.WriteByte('\\')
			}
		case '.', ')':
			if lead && i > 0 {
				sb.WriteByte('\\')
			}
		}
		lead = lead && c >= '0' && c <= '9'
		sb.WriteRune(c)
	}
	return sb.String()
}

// codeSpan writes s as a Markdown code span, safe in a table cell: its
// fence is longer than any run of backticks in s, and pipes are escaped
// as tables require.
func codeSpan(s string) string {
	s = strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`).Replace(s)
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if longest > 0 || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}
