package openapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	yaml "github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/index"

	"github.com/pb33f/libopenapi"
	"github.com/pb33f/libopenapi/datamodel"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// DefaultMaxDocumentBytes bounds a document read from a file or a URL, and
// each file or URL it refers to.
const DefaultMaxDocumentBytes = 64 << 20

// source is where the document came from, for resolving what it refers to.
type source struct {
	data    []byte
	base    *url.URL // the document's URL, for relative server URLs; nil if not loaded from one
	libcfg  *datamodel.DocumentConfiguration
	display string
}

// readSource reads the document named by cfg.
func readSource(ctx context.Context, cfg *Config) (*source, error) {
	n := 0
	for _, set := range []bool{cfg.Spec != nil, cfg.File != "", cfg.URL != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, errors.New("openapi: set exactly one of Config.Spec, Config.File and Config.URL")
	}
	limit := cfg.MaxDocumentBytes
	if limit <= 0 {
		limit = DefaultMaxDocumentBytes
	}
	lib := &datamodel.DocumentConfiguration{
		SkipCircularReferenceCheck: true, // cycles are kept, as $refs in $defs
		SkipMetadataCollection:     true,
		Logger:                     slog.New(slog.DiscardHandler),
	}
	src := &source{libcfg: lib}
	switch {
	case cfg.Spec != nil:
		src.data, src.display = cfg.Spec, "the document"
		if cfg.BasePath != "" {
			lib.BasePath = cfg.BasePath
			lib.AllowFileReferences = true
		}
	case cfg.File != "":
		abs, err := filepath.Abs(cfg.File)
		if err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
		data, err := readFileLimited(abs, limit)
		if err != nil {
			return nil, err
		}
		src.data, src.display = data, abs
		lib.BasePath = filepath.Dir(abs)
		lib.SpecFilePath = filepath.Base(abs)
		lib.AllowFileReferences = true
	default:
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openapi: Config.URL %q is not an http or https URL", cfg.URL)
		}
		get := func(raw string) (*http.Response, error) { return fetch(ctx, cfg.client(), raw, limit) }
		resp, err := get(u.String())
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapi: reading %s: %w", u.Redacted(), err)
		}
		src.data, src.display, src.base = data, u.Redacted(), u
		dir := *u
		dir.Path = dir.Path[:strings.LastIndex(dir.Path, "/")+1]
		dir.RawQuery, dir.Fragment = "", ""
		lib.BaseURL = &dir
		lib.AllowRemoteReferences = true
		lib.RemoteURLHandler = get
	}
	return src, nil
}

func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("openapi: reading %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("openapi: %s is larger than %d bytes; raise Config.MaxDocumentBytes", path, limit)
	}
	return data, nil
}

// fetch GETs raw with a body bounded to limit bytes, failing on a status
// outside 2xx.
func fetch(ctx context.Context, c *http.Client, raw string, limit int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	req.Header.Set("Accept", "application/json, application/yaml, text/yaml, */*")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("openapi: fetching the document: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		resp.Body.Close()
		return nil, fmt.Errorf("openapi: fetching %s: %s", req.URL.Redacted(), resp.Status)
	}
	resp.Body = &limitedBody{r: resp.Body, left: limit, what: req.URL.Redacted()}
	return resp, nil
}

// limitedBody fails a read past its limit instead of cutting silently.
type limitedBody struct {
	r    io.ReadCloser
	left int64
	what string
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := b.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("openapi: %s is larger than the limit; raise Config.MaxDocumentBytes", b.what)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.r.Close() }

// parsed is a document's model and what was read from its nodes.
type parsed struct {
	doc  *v3.Document
	is30 bool
	// links are the pointers of the links in operations' inline
	// responses, by operation pointer.
	links map[string][]string
}

// parse builds the OpenAPI 3.x model of the document.
func parse(src *source) (p *parsed, err error) {
	// The library is large and parses hostile input; a panic in it is
	// reported as a bad document rather than taking the host down.
	defer func() {
		if r := recover(); r != nil {
			p, err = nil, docErrorf("", "the document could not be parsed (%v)", r)
		}
	}()
	// For a JSON document the library's node parser already checks the
	// syntax; its second pass (json.Valid over the whole input) is a tenth
	// of the load of a large description. YAML keeps its duplicate-key check.
	src.libcfg.SkipJSONConversion = looksJSON(src.data)
	doc, err := libopenapi.NewDocumentWithConfiguration(src.data, src.libcfg)
	if err != nil {
		return nil, docErrorf("", "%s is not a readable OpenAPI document: %v", src.display, err)
	}
	info := doc.GetSpecInfo()
	switch {
	case info == nil:
		return nil, docErrorf("", "%s is not a readable OpenAPI document", src.display)
	case info.SpecFormat == datamodel.OAS2 || info.SpecType == "swagger":
		return nil, docErrorf("/swagger", "Swagger 2.0 is not supported; convert the document to OpenAPI 3.0 or 3.1 first")
	case !strings.HasPrefix(info.Version, "3.0") && !strings.HasPrefix(info.Version, "3.1"):
		return nil, docErrorf("/openapi", "OpenAPI version %q is not supported; this package reads OpenAPI 3.0 and 3.1", info.Version)
	}
	links := pruneResponses(info.RootNode)
	pruneSchemas(info.RootNode)
	m, err := doc.BuildV3Model()
	if m == nil {
		if err == nil {
			err = errors.New("no model was built")
		}
		return nil, docErrorf("", "%s is not a valid OpenAPI 3 document: %v", src.display, err)
	}
	if err != nil {
		return nil, locate(err, info.RootNode, src.display, src.libcfg.AllowFileReferences || src.libcfg.AllowRemoteReferences)
	}
	return &parsed{doc: &m.Model, is30: strings.HasPrefix(info.Version, "3.0"), links: links}, nil
}

// pruneResponses keeps, of every operation's responses in the parsed
// document, only what the tools read before the library models it, and
// returns the pointers of the links the responses held. A tool reads the
// JSON schemas of its success response (successCode), so that response
// keeps its JSON media types' schemas and nothing else (a reference to a
// shared response stays as it is); the other responses, descriptions,
// headers, links and examples go: modelling all of a large description's
// responses is a fifth of its load. Components are left alone, so every
// reference stays valid.
func pruneResponses(root *yaml.Node) map[string][]string {
	links := map[string][]string{}
	root = documentRoot(root)
	paths := mapValue(root, "paths")
	if paths == nil || paths.Kind != yaml.MappingNode {
		return links
	}
	for i := 0; i+1 < len(paths.Content); i += 2 {
		path, item := paths.Content[i].Value, paths.Content[i+1]
		if item.Kind != yaml.MappingNode {
			continue
		}
		for j := 0; j+1 < len(item.Content); j += 2 {
			method, op := item.Content[j].Value, item.Content[j+1]
			if !slices.Contains(methods, method) || op.Kind != yaml.MappingNode {
				continue
			}
			resps := mapValue(op, "responses")
			if resps == nil || resps.Kind != yaml.MappingNode {
				continue
			}
			ptr := pointer("paths", path, method)
			for k := 0; k+1 < len(resps.Content); k += 2 {
				code := resps.Content[k].Value
				if l := mapValue(resps.Content[k+1], "links"); l != nil && l.Kind == yaml.MappingNode {
					for n := 0; n+1 < len(l.Content); n += 2 {
						links[ptr] = append(links[ptr], child(ptr, "responses", code, "links", l.Content[n].Value))
					}
				}
			}
			resps.Content = successOnly(resps)
		}
	}
	// Example objects are never read either; their entries stay, so that
	// references to them resolve.
	if ex := mapValue(mapValue(root, "components"), "examples"); ex != nil && ex.Kind == yaml.MappingNode {
		for i := 1; i < len(ex.Content); i += 2 {
			if ex.Content[i].Kind == yaml.MappingNode {
				ex.Content[i].Content = nil
			}
		}
	}
	return links
}

// successOnly returns the content of a responses mapping reduced to its
// success response (successCode) with only its JSON schemas.
func successOnly(resps *yaml.Node) []*yaml.Node {
	keys := make([]string, 0, len(resps.Content)/2)
	for k := 0; k+1 < len(resps.Content); k += 2 {
		keys = append(keys, resps.Content[k].Value)
	}
	code := successCode(keys)
	if code == "" {
		return nil
	}
	k := 2 * slices.Index(keys, code)
	return []*yaml.Node{resps.Content[k], jsonSchemasOnly(resps.Content[k+1])}
}

// jsonSchemasOnly returns a response reduced to content.<JSON media
// type>.schema. A reference, or a response whose shape it does not know,
// is returned as it is; new nodes are built, so that nodes a YAML alias
// shares stay whole.
func jsonSchemasOnly(resp *yaml.Node) *yaml.Node {
	if resp.Kind != yaml.MappingNode || mapValue(resp, "$ref") != nil {
		return resp
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: resp.Line, Column: resp.Column}
	for i := 0; i+1 < len(resp.Content); i += 2 {
		if resp.Content[i].Value != "content" {
			continue
		}
		content := resp.Content[i+1]
		if content.Kind != yaml.MappingNode {
			return resp
		}
		kept := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: content.Line, Column: content.Column}
		for j := 0; j+1 < len(content.Content); j += 2 {
			mt, media := content.Content[j], content.Content[j+1]
			if !isJSON(mt.Value) {
				continue
			}
			if media.Kind != yaml.MappingNode {
				return resp
			}
			m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: media.Line, Column: media.Column}
			for n := 0; n+1 < len(media.Content); n += 2 {
				if media.Content[n].Value == "schema" {
					m.Content = append(m.Content, media.Content[n], media.Content[n+1])
				}
			}
			kept.Content = append(kept.Content, mt, m)
		}
		out.Content = append(out.Content, resp.Content[i], kept)
	}
	return out
}

// pruneSchemas empties, before the library indexes and models the
// document, each schema of components/schemas that no operation's
// parameters, request body or kept success response (pruneResponses)
// reach, directly or through other components: most of a large
// description's schemas serve nothing a tool reads. The entries stay,
// so every reference still resolves. It prunes nothing when it cannot be
// sure what is reached: a reference that is not a local JSON pointer, one
// it cannot resolve, or a $id, under which references take another base.
func pruneSchemas(root *yaml.Node) {
	root = documentRoot(root)
	comps := mapValue(root, "components")
	schemas := mapValue(comps, "schemas")
	if schemas == nil || schemas.Kind != yaml.MappingNode {
		return
	}
	r := reach{comps: comps, reached: map[*yaml.Node]bool{}, seenAlias: map[*yaml.Node]bool{}, sure: true}
	if !r.walk(mapValue(root, "paths")) {
		return
	}
	for i := 1; i < len(schemas.Content); i += 2 {
		if s := schemas.Content[i]; s.Kind == yaml.MappingNode && !r.reachedNode(s) {
			s.Content = nil
		}
	}
}

// documentRoot returns the top node of a parsed document: the content of
// its document node.
func documentRoot(root *yaml.Node) *yaml.Node {
	if root != nil && root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		return root.Content[0]
	}
	return root
}

// reach walks a document's nodes from the paths and finds the components
// they reach through references. sure turns false, and the walk stops, on
// anything that leaves it unsure what is reached.
type reach struct {
	comps *yaml.Node
	// reached holds the components that references reach.
	reached map[*yaml.Node]bool
	// seenAlias holds the nodes that the walk's YAML aliases stand for.
	seenAlias map[*yaml.Node]bool
	// stack holds the nodes still to walk.
	stack []*yaml.Node
	sure  bool
}

// walk walks from start and all it reaches, and reports whether it is sure
// of what it reached.
func (r *reach) walk(start *yaml.Node) bool {
	r.stack = append(r.stack, start)
	for len(r.stack) > 0 && r.sure {
		n := r.stack[len(r.stack)-1]
		r.stack = r.stack[:len(r.stack)-1]
		r.visit(n)
	}
	return r.sure
}

// reachedNode reports whether the walk reached n, by a reference or
// through a YAML alias that stands for it.
func (r *reach) reachedNode(n *yaml.Node) bool {
	return r.reached[n] || r.seenAlias[n]
}

// visit queues the nodes under n: what an alias stands for, the items of a
// sequence, and the values of a mapping, whose references it follows.
func (r *reach) visit(n *yaml.Node) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.AliasNode:
		if !r.seenAlias[n.Alias] {
			r.seenAlias[n.Alias] = true
			r.stack = append(r.stack, n.Alias)
		}
	case yaml.SequenceNode:
		r.stack = append(r.stack, n.Content...)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			r.entry(n.Content[i].Value, n.Content[i+1])
		}
	}
}

// entry follows the mapping entry k: v when it is a reference, a $id or a
// discriminator's mapping, and queues v unless it is a reference's string.
func (r *reach) entry(k string, v *yaml.Node) {
	switch k {
	case "$ref", "$dynamicRef":
		if v.Kind == yaml.ScalarNode {
			r.ref(v.Value)
			return
		}
	case "$id":
		r.sure = false
	case "mapping":
		r.mapping(v)
	}
	r.stack = append(r.stack, v)
}

// mapping follows the references of a discriminator's mapping, which names
// schemas by reference or by bare name.
func (r *reach) mapping(v *yaml.Node) {
	if v.Kind != yaml.MappingNode {
		return
	}
	for j := 1; j < len(v.Content); j += 2 {
		t := v.Content[j]
		switch {
		case t.Kind != yaml.ScalarNode:
		case strings.ContainsAny(t.Value, "#/"):
			r.ref(t.Value)
		default:
			r.ref("#/components/schemas/" + t.Value)
		}
	}
}

// ref follows a reference. One into the components reaches the component
// it names and queues it, the first time; one elsewhere in the document is
// within the paths, which are walked anyway. Any other reference, or one
// that names no component, leaves the walk unsure.
func (r *reach) ref(s string) {
	if !strings.HasPrefix(s, "#/") {
		r.sure = false
		return
	}
	tokens := strings.Split(s[2:], "/")
	if tokens[0] != "components" {
		return
	}
	target := component(r.comps, tokens)
	if target == nil {
		r.sure = false
		return
	}
	if !r.reached[target] {
		r.reached[target] = true
		r.stack = append(r.stack, target)
	}
}

// component returns the component named by the tokens of a JSON pointer
// that starts "components", kind, name; the tokens after those name a node
// within it, which reaches it too. It returns nil when there is no such
// component.
func component(comps *yaml.Node, tokens []string) *yaml.Node {
	if len(tokens) < 3 {
		return nil
	}
	kind, err1 := url.PathUnescape(tokens[1])
	name, err2 := url.PathUnescape(tokens[2])
	if err1 != nil || err2 != nil {
		return nil
	}
	return mapValue(mapValue(comps, pointerUnescaper.Replace(kind)), pointerUnescaper.Replace(name))
}

// mapValue returns the value under key in a mapping node.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// locate turns the library's errors into a DocumentError at the JSON
// pointer of the first one's node, saying how many more there are.
func locate(err error, root *yaml.Node, display string, files bool) *DocumentError {
	errs := flatten(err)
	first := errs[0]
	de := &DocumentError{Problem: first.Error()}
	var ie *index.IndexingError
	var re *index.ResolvingError
	var node *yaml.Node
	switch {
	case errors.As(first, &ie):
		node = ie.Node
	case errors.As(first, &re):
		node = re.Node
	}
	if node != nil {
		if p, ok := nodePointer(root, node); ok {
			de.Pointer = p
			if ref, isRef := refOf(node); isRef && node.Kind == yaml.MappingNode {
				de.Pointer += "/$ref"
				de.Problem = unresolved(ref, files)
			}
		} else {
			de.Problem = fmt.Sprintf("%s (line %d, column %d)", de.Problem, node.Line, node.Column)
		}
	}
	if len(errs) > 1 {
		de.Problem += fmt.Sprintf(" (and %d more problems in %s)", len(errs)-1, display)
	}
	return de
}

func flatten(err error) []error {
	if u, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range u.Unwrap() {
			if e != nil {
				out = append(out, flatten(e)...)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return []error{err}
}

// nodePointer finds target under root and returns its JSON pointer.
func nodePointer(root, target *yaml.Node) (string, bool) {
	var segs []string
	seen := map[*yaml.Node]bool{}
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if n == nil || seen[n] {
			return false
		}
		seen[n] = true
		if n == target {
			return true
		}
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				if walk(c) {
					return true
				}
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				segs = append(segs, n.Content[i].Value)
				if n.Content[i] == target || walk(n.Content[i+1]) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				segs = append(segs, strconv.Itoa(i))
				if walk(c) {
					return true
				}
				segs = segs[:len(segs)-1]
			}
		}
		return false
	}
	if !walk(root) {
		return "", false
	}
	return pointer(segs...), true
}

// unresolved says that ref leads nowhere, and what to do if it names a
// file the document was not allowed to read.
func unresolved(ref string, files bool) string {
	msg := fmt.Sprintf("$ref %q does not resolve to anything in the document or its relative files", ref)
	if !strings.HasPrefix(ref, "#") && !files {
		msg += "; to follow references to other files, load the document with Config.File or set Config.BasePath"
	}
	return msg
}

// looksJSON reports whether data starts, after white space, like a JSON
// object.
func looksJSON(data []byte) bool {
	for _, c := range data {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}
