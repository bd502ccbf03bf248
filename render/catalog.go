package render

import (
	"bytes"
	"embed"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
	"unicode/utf8"
)

//go:embed templates
var templateFS embed.FS

var (
	howToUse    = mustRead("templates/how_to_use.txt")
	pointerText = mustRead("templates/pointer.txt")
	descTmpl    = template.Must(template.ParseFS(templateFS, "templates/description.tmpl"))
	hintTmpl    = template.Must(template.ParseFS(templateFS, "templates/discovery_hint.tmpl"))
	pointerTmpl = template.Must(template.ParseFS(templateFS, "templates/pointer_discovery.tmpl"))
)

// discoveryData fills the discovery templates with an example drawn from
// the registry itself.
type discoveryData struct {
	Module string // the module search and describe are imported from
	Query  string // words of the first tool's name, as a search query
	Name   string // the first tool's dotted path, as a Python string literal
}

func (r *Registry) discoveryExample() discoveryData {
	e := r.entries[0]
	query := strings.Join(strings.FieldsFunc(e.Attr, func(c rune) bool { return c == '_' }), " ")
	if query == "" {
		query = e.Attr
	}
	return discoveryData{Module: r.Discovery(), Query: query, Name: strRepr(e.Path)}
}

// howToUse is the block's how-to-use text, its example import that of
// the catalog's first tool (an example the model can run), and the shared
// parameters that some tool takes, described once.
func (r *Registry) howToUse() string {
	example := ""
	if len(r.entries) > 0 {
		example = ", for example `" + importLine(r.entries[0]) + "`"
	}
	text := strings.Replace(howToUse, "{{example}}", example, 1)
	var shared []string
	for _, sp := range r.shared {
		if r.declares(sp.Name) {
			shared = append(shared, "`"+sp.Name+"`: "+oneLine(sp.Description))
		}
	}
	if len(shared) > 0 {
		text += "\nThese optional keyword arguments are not repeated in the signatures below; every tool takes them"
		if without := r.lacking(); len(without) > 0 {
			text += " except " + strings.Join(without, ", ")
		}
		text += ":\n- " + strings.Join(shared, "\n- ")
	}
	return text
}

// lacking are the tools, as code calls them, that take none of the shared
// parameters the block describes.
func (r *Registry) lacking() []string {
	shared := r.sharedNames()
	var out []string
	for i, ps := range r.params {
		if !slices.ContainsFunc(ps, func(p param) bool { return isShared(shared, p) }) {
			out = append(out, r.entries[i].Path)
		}
	}
	sort.Strings(out)
	return out
}

// sharedNames maps each shared parameter's name to its description.
func (r *Registry) sharedNames() map[string]string {
	if len(r.shared) == 0 {
		return nil
	}
	m := make(map[string]string, len(r.shared))
	for _, sp := range r.shared {
		m[sp.Name] = sp.Description
	}
	return m
}

// isShared says whether p is a shared parameter: its name is one, and its
// schema has that parameter's description. A tool's own parameter of the
// same name, described otherwise, is its own and stays in its Args.
func isShared(shared map[string]string, p param) bool {
	d, ok := shared[p.raw]
	return ok && p.node.String("description") == d
}

// declares says whether some tool has the shared parameter name.
func (r *Registry) declares(name string) bool {
	shared := r.sharedNames()
	for _, ps := range r.params {
		for _, p := range ps {
			if p.raw == name && isShared(shared, p) {
				return true
			}
		}
	}
	return false
}

func execute(t *template.Template, data any) string {
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		panic(err) // the templates are embedded and tested
	}
	return strings.Trim(buf.String(), "\n")
}

func mustRead(name string) string {
	b, err := templateFS.ReadFile(name)
	if err != nil {
		panic(err)
	}
	return strings.Trim(string(b), "\n")
}

// Detail selects how much of each tool the catalog shows.
type Detail int

const (
	// Full shows every tool's signature and docstring.
	Full Detail = iota
	// Names shows only the import line of each namespace.
	Names
	// Signatures shows every tool's signature with a one-line summary,
	// without the Args, Constraints and Returns sections.
	Signatures
)

// String returns "full", "signatures" or "names".
func (d Detail) String() string {
	switch d {
	case Names:
		return "names"
	case Signatures:
		return "signatures"
	}
	return "full"
}

// less returns the next smaller detail: Full, then Signatures, then Names.
func (d Detail) less() (Detail, bool) {
	switch d {
	case Full:
		return Signatures, true
	case Signatures:
		return Names, true
	}
	return Names, false
}

// DefaultBudget is the default size limit of the <code-mode> block, in
// characters.
const DefaultBudget = 50000

// Catalog returns the tools package as .pyi-like text: one section per
// namespace in sorted order, then the top-level section. Each section has a
// header comment and the import line; with Full detail it also has every
// tool's signature and docstring, with Signatures every tool's signature
// and a one-line summary.
func (r *Registry) Catalog(d Detail) string {
	return r.catalog(d).text
}

// catalogText is a rendered catalog with its sections and their sizes.
type catalogText struct {
	text string
	// runes counts the code points of text without its leading and
	// trailing newlines.
	runes int
	// sections holds the text of each section (joined by "\n" in text),
	// secRunes the code points of each.
	sections []string
	secRunes []int
	// spans holds, in Full detail, where each tool's signature and
	// docstring lie in text, as byte offset and length.
	spans [][2]int
}

func (r *Registry) catalog(d Detail) catalogText {
	if d != Names && d != Signatures {
		d = Full
	}
	r.catalogOnce[d].Do(func() {
		r.catalogs[d] = r.buildCatalog(d)
	})
	return r.catalogs[d]
}

// sectionBounds returns the start of each section in r.entries, and
// len(r.entries) last.
func (r *Registry) sectionBounds() []int {
	var out []int
	for i, e := range r.entries {
		if i == 0 || e.Package != r.entries[i-1].Package {
			out = append(out, i)
		}
	}
	return append(out, len(r.entries))
}

// buildCatalog renders the catalog in one piece; its sections are slices
// of the text.
func (r *Registry) buildCatalog(d Detail) catalogText {
	var rendered []renderedTool
	var summaries []string
	if d != Names {
		rendered = r.render()
	}
	if d == Signatures {
		summaries = r.summaries()
	}
	bounds := r.sectionBounds()
	size := 64 * len(bounds)
	for i, e := range r.entries {
		size += len(e.Attr) + 2
		switch d {
		case Full:
			size += len(rendered[i].catalogSig) + len(rendered[i].docstring) + 10
		case Signatures:
			size += len(rendered[i].catalogSig) + len(summaries[i]) + 2
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	offsets := make([]int, 0, len(bounds))
	var spans [][2]int
	if d == Full {
		spans = make([][2]int, len(r.entries))
	}
	for s := 0; s+1 < len(bounds); s++ {
		start, end := bounds[s], bounds[s+1]
		if s > 0 {
			sb.WriteString("\n")
		}
		offsets = append(offsets, sb.Len())
		module := "tools"
		if pkg := r.entries[start].Package; pkg != "" {
			module += "." + pkg
		}
		sb.WriteString("# " + module + "\n\nfrom " + module + " import ")
		for i, e := range r.entries[start:end] {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(e.Attr)
		}
		if d != Names {
			sb.WriteString("\n\n")
			for i := start; i < end; i++ {
				if i > start {
					sb.WriteString("\n")
				}
				start := sb.Len()
				sb.WriteString(rendered[i].catalogSig)
				sb.WriteString("\n")
				if d == Signatures {
					sb.WriteString(summaries[i])
					continue
				}
				sb.WriteString(rendered[i].docstring)
				sb.WriteString("    ...\n")
				spans[i] = [2]int{start, sb.Len() - start}
			}
		}
	}
	text := sb.String()
	c := catalogText{text: text, sections: make([]string, len(offsets)), secRunes: make([]int, len(offsets)), spans: spans}
	for i, off := range offsets {
		end := len(text)
		if i+1 < len(offsets) {
			end = offsets[i+1] - 1 // less the joining newline
		}
		c.sections[i] = text[off:end]
		c.secRunes[i] = utf8.RuneCountInString(c.sections[i])
	}
	c.runes = utf8.RuneCountInString(strings.Trim(text, "\n"))
	return c
}

// fitCatalog chooses the detail of each section so that the catalog fits
// room code points, and returns the text of each section, to be joined
// with newlines, and their tiers; ok is false when even the names of every
// section do not fit. Every section starts at
// Full; while the catalog is too large, the section that is largest at its
// current detail (the first in catalog order among equals) drops to the next
// smaller one: Full, then Signatures, then Names. Large namespaces so give
// way first and small ones keep their full detail.
func (r *Registry) fitCatalog(room int) (sections []string, tiers []Detail, ok bool) {
	cats := [3]catalogText{}
	get := func(d Detail) catalogText {
		if cats[d].sections == nil {
			cats[d] = r.catalog(d)
		}
		return cats[d]
	}
	full := get(Full)
	n := len(full.sections)
	tiers = make([]Detail, n)
	if full.runes <= room {
		return full.sections, tiers, true
	}
	// The catalog's size: its sections, the newlines joining them, less the
	// trailing newline of the last, which the element strips.
	size := full.runes
	last := func() int {
		if d := tiers[n-1]; d != Names {
			return 1
		}
		return 0
	}
	for size > room {
		pick := -1
		for i := range n {
			if _, more := tiers[i].less(); !more {
				continue
			}
			if pick < 0 || get(tiers[i]).secRunes[i] > get(tiers[pick]).secRunes[pick] {
				pick = i
			}
		}
		if pick < 0 {
			return nil, tiers, false
		}
		before := last()
		next, _ := tiers[pick].less()
		size += get(next).secRunes[pick] - get(tiers[pick]).secRunes[pick]
		tiers[pick] = next
		size += before - last()
	}
	sections = make([]string, n)
	for i, d := range tiers {
		sections[i] = get(d).sections[i]
	}
	return sections, tiers, true
}

// Environment describes the sandbox's Python, as its runtime reports it.
type Environment struct {
	// PythonVersion is the interpreter version, such as "3.12.4"; "" if not
	// known yet.
	PythonVersion string
	// Packages maps an import name to the distributions that provide it and
	// their versions: {"yaml": {"PyYAML": "6.0.2"}}.
	Packages map[string]map[string]string
	// Discovery says the block may point the model to search(query) and
	// describe(name), which every tools package from Stubs offers. The block then points the model to them whenever a
	// section is shown without its full docstrings, and in the pointer tier.
	Discovery bool
	// Network says what the code's network can reach, as the backend
	// states it ("" leaves the block's <network> element out).
	Network string
	// Direct names the tools the model may also call directly, as function
	// calls of their own; the block then says, in a <routing> element,
	// when to call them directly and when from code. Empty leaves it out.
	Direct []string
}

func (env Environment) packageLines() []string {
	names := make([]string, 0, len(env.Packages))
	for name, dists := range env.Packages {
		if name != "" && len(dists) > 0 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, name := range names {
		dists := env.Packages[name]
		ds := make([]string, 0, len(dists))
		for dist := range dists {
			ds = append(ds, dist)
		}
		sort.Strings(ds)
		parts := make([]string, len(ds))
		for i, dist := range ds {
			parts[i] = strings.TrimSpace(dist + " " + dists[dist])
		}
		out = append(out, oneLine(name)+": "+oneLine(strings.Join(parts, ", ")))
	}
	return out
}

// oneLine keeps reported names from breaking the block's layout.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type blockKey struct {
	env       string
	budget    int
	discovery bool
	network   string
	direct    string
}

// Block returns the <code-mode> block to append to the system instruction:
// how to use the tools, the Python version, the installed packages and the
// tools package. Empty elements are left out. The tools package is fitted
// to budget characters, judged on the whole block: every section starts at
// Full and, while the block is too large, the section that is largest at
// its current detail drops one step (Full, Signatures, Names). When even
// the names of every section do not fit, a pointer telling the model how
// to discover the tools itself takes their place; it is returned even when
// it does not fit. With env.Discovery, a catalog that is not full is headed
// by a hint to use search and describe from tools, and the pointer names
// them. A budget of zero or less means DefaultBudget.
func (r *Registry) Block(env Environment, budget int) string {
	if budget <= 0 {
		budget = DefaultBudget
	}
	lines := env.packageLines()
	key := blockKey{env: oneLine(env.PythonVersion) + "\x00" + strings.Join(lines, "\n"), budget: budget, discovery: env.Discovery, network: env.Network, direct: strings.Join(env.Direct, "\x00")}
	r.mu.Lock()
	if b, ok := r.blocks[key]; ok {
		r.mu.Unlock()
		return b
	}
	r.mu.Unlock()
	b := r.buildBlock(env, lines, budget)
	r.mu.Lock()
	if r.blocks == nil {
		r.blocks = map[blockKey]string{}
	}
	if len(r.blocks) > 64 {
		clear(r.blocks)
	}
	r.blocks[key] = b
	r.mu.Unlock()
	return b
}

func (r *Registry) buildBlock(env Environment, pkgLines []string, budget int) string {
	var fixed []string
	fixed = append(fixed, element("how-to-use", r.howToUse()))
	if v := oneLine(env.PythonVersion); v != "" {
		fixed = append(fixed, "  <python-version>"+v+"</python-version>")
	}
	if n := oneLine(env.Network); n != "" {
		fixed = append(fixed, "  <network>"+n+"</network>")
	}
	if r := routing(env.Direct); r != "" {
		fixed = append(fixed, "  <routing>"+r+"</routing>")
	}
	if len(pkgLines) > 0 {
		fixed = append(fixed, element("installed-packages", strings.Join(pkgLines, "\n")))
	}
	// assemble writes the block with the tools package made of head and
	// the pieces joined by newlines, straight into the block's buffer.
	assemble := func(head string, pieces ...string) string {
		size := len("<code-mode>\n</code-mode>") + len(head) + 64
		for _, p := range pieces {
			size += len(p) + 1
		}
		for _, f := range fixed {
			size += len(f) + 1
		}
		var sb strings.Builder
		sb.Grow(size)
		sb.WriteString("<code-mode>")
		for _, f := range fixed {
			sb.WriteString("\n")
			sb.WriteString(f)
		}
		if len(pieces) > 0 {
			sb.WriteString("\n  <tools-package>\n")
			sb.WriteString(head)
			for i, p := range pieces {
				if i > 0 {
					sb.WriteString("\n")
				}
				if i == len(pieces)-1 {
					p = strings.TrimRight(p, "\n")
				}
				sb.WriteString(p)
			}
			sb.WriteString("\n  </tools-package>")
		}
		sb.WriteString("\n</code-mode>")
		return sb.String()
	}
	if len(r.entries) == 0 {
		return assemble("")
	}
	// Every piece of the block starts and ends with ASCII, so the block's
	// length in code points is the sum of its pieces' lengths: the block
	// is only built for the tier that fits.
	base := utf8.RuneCountInString("<code-mode>\n</code-mode>")
	for _, f := range fixed {
		base += 1 + utf8.RuneCountInString(f)
	}
	base += 1 + utf8.RuneCountInString(element("tools-package", ""))
	if !env.Discovery {
		if sections, _, ok := r.fitCatalog(budget - base); ok {
			return assemble("", sections...)
		}
		return assemble("", pointerText)
	}
	ex := r.discoveryExample()
	if full := r.catalog(Full); base+full.runes <= budget {
		return assemble("", full.sections...)
	}
	// The hint heads every catalog that is not full, and counts.
	hint := execute(hintTmpl, ex)
	if sections, _, ok := r.fitCatalog(budget - base - utf8.RuneCountInString(hint) - 2); ok {
		return assemble(hint+"\n\n", sections...)
	}
	return assemble("", execute(pointerTmpl, ex))
}

// element renders a block tag on its own indented lines around content,
// which is stripped of leading and trailing newlines.
func element(tag, content string) string {
	return "  <" + tag + ">\n" + strings.Trim(content, "\n") + "\n  </" + tag + ">"
}

// DescriptionConfig selects the variant of the execute_code description.
type DescriptionConfig struct {
	// BlockAppended says the <code-mode> block is in the system
	// instruction; without it the description tells the model to discover
	// the tools package itself.
	BlockAppended bool
	// DiscoveryModule is the module search and describe are imported from
	// (Registry.Discovery, or "tools._discovery", which always has them).
	// When it is set and the block is not appended, the description tells
	// the model to find tools with them. Empty leaves them unmentioned.
	DiscoveryModule string
	// ArtifactTools says save_artifact and load_artifact are available.
	ArtifactTools bool
	// Timeout is the limit on one execute_code call; zero for none.
	Timeout time.Duration
	// ToolTimeout is the limit on one tool call from code; zero for none.
	ToolTimeout time.Duration
	// BlocksPerTurn is the most execute_code calls one turn may make; zero
	// for no bound.
	BlocksPerTurn int
	// Durable says a block paused for approval may be resumed by running
	// the turn's code again, which the description then asks code to allow.
	Durable bool
}

type descriptionData struct {
	BlockAppended   bool
	DiscoveryModule string
	ArtifactTools   bool
	Timeout         string
	ToolTimeout     string
	BlocksPerTurn   int
	Durable         bool
}

// Description returns the description of the execute_code tool.
func Description(cfg DescriptionConfig) string {
	data := descriptionData{BlockAppended: cfg.BlockAppended, DiscoveryModule: cfg.DiscoveryModule, ArtifactTools: cfg.ArtifactTools,
		BlocksPerTurn: max(cfg.BlocksPerTurn, 0), Durable: cfg.Durable}
	if cfg.Timeout > 0 {
		data.Timeout = strconv.FormatFloat(cfg.Timeout.Seconds(), 'f', -1, 64)
	}
	if cfg.ToolTimeout > 0 {
		data.ToolTimeout = strconv.FormatFloat(cfg.ToolTimeout.Seconds(), 'f', -1, 64)
	}
	var buf bytes.Buffer
	if err := descTmpl.Execute(&buf, data); err != nil {
		panic(err) // the template is embedded and tested
	}
	return strings.TrimSpace(buf.String())
}

// routing is the <routing> element's text for the tools the model may also
// call directly, or "" for none: a single call, or a step whose result the
// model must read before it decides, is cheaper as a direct call; chains,
// fan-out, loops and reductions are cheaper in code, which calls the same
// tools.
func routing(direct []string) string {
	var names []string
	for _, n := range direct {
		if n = oneLine(n); n != "" {
			names = append(names, "`"+n+"`")
		}
	}
	if len(names) == 0 {
		return ""
	}
	return "You may also call " + strings.Join(names, ", ") + " directly, as function calls of their own. " +
		"Call a tool directly for a single call, or when you must read its result before deciding what to do next; " +
		"use execute_code for chains of calls, many calls, loops and reducing large results, where the code imports the same tools."
}
