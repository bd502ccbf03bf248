package render

import (
	"bytes"
	"embed"
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
)

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
)

// String returns "full" or "names".
func (d Detail) String() string {
	if d == Names {
		return "names"
	}
	return "full"
}

// DefaultBudget is the default size limit of the <code-mode> block, in
// characters.
const DefaultBudget = 50000

// Catalog returns the tools package as .pyi-like text: one section per
// namespace in sorted order, then the top-level section. Each section has a
// header comment and the import line; with Full detail it also has every
// tool's signature and docstring.
func (r *Registry) Catalog(d Detail) string {
	return r.catalog(d).text
}

// catalogText is a rendered catalog with the size of its text as the
// tools-package element holds it.
type catalogText struct {
	text string
	// runes counts the code points of text without its leading and
	// trailing newlines.
	runes int
}

func (r *Registry) catalog(d Detail) catalogText {
	if d != Names {
		d = Full
	}
	r.catalogOnce[d].Do(func() {
		text := r.buildCatalog(d)
		r.catalogs[d] = catalogText{text: text, runes: utf8.RuneCountInString(strings.Trim(text, "\n"))}
	})
	return r.catalogs[d]
}

func (r *Registry) buildCatalog(d Detail) string {
	var rendered []renderedTool
	size := 0
	if d == Full {
		rendered = r.render()
		for _, rt := range rendered {
			size += len(rt.catalogSig) + len(rt.docstring) + 10
		}
	}
	for _, e := range r.entries {
		size += len(e.Attr) + 2
	}
	var sb strings.Builder
	sb.Grow(size + 64*len(r.Namespaces()) + 64)
	for start := 0; start < len(r.entries); {
		end := start
		for end < len(r.entries) && r.entries[end].Package == r.entries[start].Package {
			end++
		}
		module := "tools"
		if pkg := r.entries[start].Package; pkg != "" {
			module += "." + pkg
		}
		if start > 0 {
			sb.WriteString("\n")
		}
		sb.WriteString("# " + module + "\n\nfrom " + module + " import ")
		for i, e := range r.entries[start:end] {
			if i > 0 {
				sb.WriteString(", ")
			}
			sb.WriteString(e.Attr)
		}
		if d == Full {
			sb.WriteString("\n\n")
			for i := start; i < end; i++ {
				if i > start {
					sb.WriteString("\n")
				}
				rt := rendered[i]
				sb.WriteString(rt.catalogSig)
				sb.WriteString("\n")
				sb.WriteString(rt.docstring)
				sb.WriteString("    ...\n")
			}
		}
		start = end
	}
	return sb.String()
}

// Environment describes the sandbox's Python, as its runtime reports it.
type Environment struct {
	// PythonVersion is the interpreter version, such as "3.12.4"; "" if not
	// known yet.
	PythonVersion string
	// Packages maps an import name to the distributions that provide it and
	// their versions: {"yaml": {"PyYAML": "6.0.2"}}.
	Packages map[string]map[string]string
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
	env    string
	budget int
}

// Block returns the <code-mode> block to append to the system instruction:
// how to use the tools, the Python version, the installed packages and the
// tools package. Empty elements are left out. The tools package is shown in
// the first of three tiers whose whole block fits budget characters: the
// full catalog, the names-only catalog, or a pointer telling the model how
// to discover the tools itself. The pointer tier is returned even when it
// does not fit. A budget of zero or less means DefaultBudget.
func (r *Registry) Block(env Environment, budget int) string {
	if budget <= 0 {
		budget = DefaultBudget
	}
	lines := env.packageLines()
	key := blockKey{env: oneLine(env.PythonVersion) + "\x00" + strings.Join(lines, "\n"), budget: budget}
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
	fixed = append(fixed, element("how-to-use", howToUse))
	if v := oneLine(env.PythonVersion); v != "" {
		fixed = append(fixed, "  <python-version>"+v+"</python-version>")
	}
	if len(pkgLines) > 0 {
		fixed = append(fixed, element("installed-packages", strings.Join(pkgLines, "\n")))
	}
	assemble := func(tools string) string {
		size := len("<code-mode>\n</code-mode>") + len(tools) + 64
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
		if tools != "" {
			sb.WriteString("\n")
			writeElement(&sb, "tools-package", tools)
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
	for _, d := range []Detail{Full, Names} {
		if c := r.catalog(d); base+c.runes <= budget {
			return assemble(c.text)
		}
	}
	return assemble(pointerText)
}

// element renders a block tag on its own indented lines around content,
// which is stripped of leading and trailing newlines.
func element(tag, content string) string {
	return "  <" + tag + ">\n" + strings.Trim(content, "\n") + "\n  </" + tag + ">"
}

// writeElement writes element(tag, content) to sb.
func writeElement(sb *strings.Builder, tag, content string) {
	sb.WriteString("  <" + tag + ">\n")
	sb.WriteString(strings.Trim(content, "\n"))
	sb.WriteString("\n  </" + tag + ">")
}

// DescriptionConfig selects the variant of the execute_code description.
type DescriptionConfig struct {
	// BlockAppended says the <code-mode> block is in the system
	// instruction; without it the description tells the model to discover
	// the tools package itself.
	BlockAppended bool
	// ArtifactTools says save_artifact and load_artifact are available.
	ArtifactTools bool
	// Timeout is the limit on one execute_code call; zero for none.
	Timeout time.Duration
}

type descriptionData struct {
	BlockAppended bool
	ArtifactTools bool
	Timeout       string
}

// Description returns the description of the execute_code tool.
func Description(cfg DescriptionConfig) string {
	data := descriptionData{BlockAppended: cfg.BlockAppended, ArtifactTools: cfg.ArtifactTools}
	if cfg.Timeout > 0 {
		data.Timeout = strconv.FormatFloat(cfg.Timeout.Seconds(), 'f', -1, 64)
	}
	var buf bytes.Buffer
	if err := descTmpl.Execute(&buf, data); err != nil {
		panic(err) // the template is embedded and tested
	}
	return strings.TrimSpace(buf.String())
}
