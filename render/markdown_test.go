package render

import (
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"google.golang.org/genai"
)

// mdSection is what a Markdown parser finds under one tool heading.
type mdSection struct {
	signature string
	example   string // the code block after "Example call:"
	header    []string
	rows      [][]string
}

// parseSections parses src with goldmark (GitHub tables on) and returns,
// for each heading of the given level, the code block and table below it.
func parseSections(t *testing.T, src string, level int) map[string]*mdSection {
	t.Helper()
	md := goldmark.New(goldmark.WithExtensions(extension.Table))
	source := []byte(src)
	doc := md.Parser().Parse(text.NewReader(source))
	out := map[string]*mdSection{}
	var cur *mdSection
	cellText := func(n ast.Node) string {
		var sb strings.Builder
		_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
			if entering {
				switch c := c.(type) {
				case *ast.Text:
					// The renderer undoes backslash escapes; so does this.
					sb.Write(util.UnescapePunctuations(c.Segment.Value(source)))
				case *ast.String:
					sb.Write(c.Value)
				}
			}
			return ast.WalkContinue, nil
		})
		return sb.String()
	}
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		switch n := n.(type) {
		case *ast.Heading:
			if n.Level == level {
				cur = &mdSection{}
				name := cellText(n)
				if _, dup := out[name]; dup {
					t.Errorf("two sections for %s", name)
				}
				out[name] = cur
			} else if n.Level < level {
				cur = nil
			}
		case *ast.FencedCodeBlock:
			if cur != nil {
				var sb strings.Builder
				for i := 0; i < n.Lines().Len(); i++ {
					seg := n.Lines().At(i)
					sb.Write(seg.Value(source))
				}
				switch {
				case cur.signature == "":
					cur.signature = sb.String()
				case n.PreviousSibling() != nil && cellText(n.PreviousSibling()) == "Example call:":
					cur.example = sb.String()
				}
			}
		case *extast.Table:
			if cur == nil {
				t.Errorf("a table outside any tool section")
				continue
			}
			for r := n.FirstChild(); r != nil; r = r.NextSibling() {
				var cells []string
				for c := r.FirstChild(); c != nil; c = c.NextSibling() {
					cells = append(cells, cellText(c))
				}
				if _, ok := r.(*extast.TableHeader); ok {
					cur.header = cells
				} else {
					cur.rows = append(cur.rows, cells)
				}
			}
		}
	}
	return out
}

func TestMarkdownParses(t *testing.T) {
	tools := []Tool{
		{Namespace: "slack", Declaration: &genai.FunctionDeclaration{
			Name:        "send_message",
			Description: "Post a message.\n\n## Not a heading | nor a table\n- nor a list",
			ParametersJsonSchema: map[string]any{
				"type":     "object",
				"required": []any{"channel"},
				"properties": map[string]any{
					"channel": map[string]any{"type": "string", "pattern": "^a|b`c$", "description": "Where | to."},
					"n":       map[string]any{"type": "integer", "default": 3, "minimum": 1},
				},
			},
			ResponseJsonSchema: map[string]any{"type": "string"},
		}},
		{Declaration: &genai.FunctionDeclaration{Name: "ping"}},
		{Namespace: "slack", Declaration: &genai.FunctionDeclaration{Name: "list_channels", Description: "# Channels"}},
	}
	r, err := NewRegistry(tools)
	if err != nil {
		t.Fatal(err)
	}
	src := r.Markdown()
	if again := r.Markdown(); again != src {
		t.Error("Markdown is not byte-stable")
	}
	sections := parseSections(t, src, 3)
	if len(sections) != len(tools) {
		t.Errorf("%d tool sections, want %d:\n%s", len(sections), len(tools), src)
	}
	wantHeader := "name type required constraints default description"
	for _, e := range r.Entries() {
		s, ok := sections[e.Path]
		if !ok {
			t.Errorf("no section for %s:\n%s", e.Path, src)
			continue
		}
		if !strings.HasPrefix(s.signature, "def "+e.Attr+"(") {
			t.Errorf("%s: signature %q", e.Path, s.signature)
		}
		if e.Attr == "ping" || e.Attr == "list_channels" {
			if s.header != nil {
				t.Errorf("%s has no parameters but a table", e.Path)
			}
			continue
		}
		if got := strings.Join(s.header, " "); got != wantHeader {
			t.Errorf("%s: table header %q, want %q", e.Path, got, wantHeader)
		}
		want := [][]string{
			{"channel", "str", "yes", "pattern=^a|b`c$", "", "Where | to."},
			{"n", "int", "no", "minimum=1", "3", ""},
		}
		if len(s.rows) != len(want) {
			t.Fatalf("%s: rows %q, want %q", e.Path, s.rows, want)
		}
		for i := range want {
			if strings.Join(s.rows[i], "\x00") != strings.Join(want[i], "\x00") {
				t.Errorf("%s: row %d = %q, want %q", e.Path, i, s.rows[i], want[i])
			}
		}
		if !strings.Contains(s.signature, "-> str") {
			t.Errorf("%s: signature %q lacks the declared return type", e.Path, s.signature)
		}
	}
	pages := r.MarkdownPages()
	var paths []string
	for _, p := range pages {
		paths = append(paths, p.Path)
		if p.Path == IndexPage {
			continue
		}
		if n := len(parseSections(t, p.Content, 2)); n == 0 {
			t.Errorf("page %s has no tool sections", p.Path)
		}
	}
	if got := strings.Join(paths, " "); got != "index.md tools.md tools.slack.md" {
		t.Errorf("pages = %s", got)
	}
}
