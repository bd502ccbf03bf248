package openapi

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/genai"

	yaml "github.com/pb33f/go-yaml"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"
)

// builder turns a document's operations into Ops.
type builder struct {
	cfg    *Config
	src    *source
	doc    *v3.Document
	conv   *converter
	auth   *authenticator
	links  map[string][]string // links of inline responses, by operation
	names  namer
	ops    []*Op
	report Report
}

// methods in the order their tools are made, within a path.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func (b *builder) build() error {
	b.reportUnsupported()
	if b.doc.Paths == nil {
		return nil
	}
	for path, item := range b.doc.Paths.PathItems.FromOldest() {
		if item == nil {
			continue
		}
		ops := map[string]*v3.Operation{
			"get": item.Get, "put": item.Put, "post": item.Post, "delete": item.Delete,
			"options": item.Options, "head": item.Head, "patch": item.Patch, "trace": item.Trace,
		}
		for _, m := range methods {
			op := ops[m]
			if op == nil {
				continue
			}
			ptr := pointer("paths", path, m)
			info := Operation{
				ID: op.OperationId, Method: strings.ToUpper(m), Path: path,
				Tags: op.Tags, Deprecated: op.Deprecated != nil && *op.Deprecated, Pointer: ptr,
			}
			if !b.cfg.selected(info) {
				continue
			}
			t, err := b.operation(info, item, op)
			if err != nil {
				de := asDocumentError(err, ptr)
				if !b.cfg.SkipInvalid {
					return de
				}
				b.report.Skipped = append(b.report.Skipped, de)
				continue
			}
			b.ops = append(b.ops, t)
		}
	}
	return nil
}

// reportUnsupported lists the webhooks, callbacks and links that no tool
// covers.
func (b *builder) reportUnsupported() {
	for name := range b.doc.Webhooks.FromOldest() {
		b.unsupported(pointer("webhooks", name), "webhooks are not supported: no tool is made for them")
	}
	if b.doc.Components != nil {
		for name := range b.doc.Components.Callbacks.FromOldest() {
			b.unsupported(pointer("components", "callbacks", name), "callbacks are not supported")
		}
		for name := range b.doc.Components.Links.FromOldest() {
			b.unsupported(pointer("components", "links", name), noLinks)
		}
		for code, r := range b.doc.Components.Responses.FromOldest() {
			for name := range r.Links.FromOldest() {
				b.unsupported(pointer("components", "responses", code, "links", name), noLinks)
			}
		}
	}
	if b.doc.Paths == nil {
		return
	}
	for path, item := range b.doc.Paths.PathItems.FromOldest() {
		if item == nil {
			continue
		}
		for m, op := range item.GetOperations().FromOldest() {
			ptr := pointer("paths", path, m)
			for name := range op.Callbacks.FromOldest() {
				b.unsupported(child(ptr, "callbacks", name), "callbacks are not supported: the operation's tool does not receive them")
			}
			for _, l := range b.links[ptr] {
				b.unsupported(l, noLinks)
			}
		}
	}
}

const noLinks = "links are not supported: responses are returned without following them"

func (b *builder) unsupported(ptr, problem string) {
	b.report.Unsupported = append(b.report.Unsupported, &DocumentError{Pointer: ptr, Problem: problem})
}

// param is one parameter of an operation as the tool sends it.
type param struct {
	prop          string // the tool parameter's name
	name          string // the name on the wire
	in            string
	style         string
	explode       bool
	allowReserved bool
	required      bool
	asJSON        bool // declared with content: sent as JSON text
}

// body is an operation's request body as the tool sends it.
type body struct {
	mediaType string
	kind      bodyKind
	prop      string   // the tool parameter holding the whole body; "" when flattened
	fields    []string // flattened: the tool parameters that are the body's properties
	required  bool
	binary    map[string]bool   // multipart fields sent as files
	partTypes map[string]string // multipart fields' declared content types
}

type bodyKind int

const (
	bodyJSON bodyKind = iota + 1
	bodyForm
	bodyMultipart
	bodyRaw
)

// ignoredHeaders are header parameters the specification says to ignore.
var ignoredHeaders = map[string]bool{"accept": true, "content-type": true, "authorization": true}

var templateVar = regexp.MustCompile(`\{([^{}]*)\}`)

// located is a parameter with its JSON pointer.
type located struct {
	p   *v3.Parameter
	ptr string
}

// toolParams collects a tool's parameters as the operation is read.
type toolParams struct {
	props    map[string]any  // the parameter schema's properties
	required []string        // required properties, in order
	taken    map[string]bool // property names in use
	deps     []*def          // the $defs the properties reach
	params   []param         // the parameters sent in path, query, header, cookie
}

// operation builds the tool of one operation.
func (b *builder) operation(info Operation, item *v3.PathItem, op *v3.Operation) (*Op, error) {
	ptr := info.Pointer
	sec, err := b.auth.requirements(b.doc, op, ptr)
	if err != nil {
		return nil, err
	}
	all, err := merged(info, item, op)
	if err != nil {
		return nil, err
	}
	tp := &toolParams{props: map[string]any{}, taken: map[string]bool{}}
	hidden := b.auth.hiddenParams(sec)
	for _, l := range all {
		if err := b.parameter(tp, l, hidden); err != nil {
			return nil, err
		}
	}
	if err := checkTemplate(info, tp.params); err != nil {
		return nil, err
	}
	var bd *body
	if op.RequestBody != nil {
		if bd, err = b.body(op.RequestBody, child(ptr, "requestBody"), tp); err != nil {
			return nil, err
		}
	}
	server, err := b.server(op, item, info.Path, ptr)
	if err != nil {
		return nil, err
	}

	wanted := info.ID
	if wanted == "" {
		wanted = info.Method + " " + info.Path
	}
	name := b.names.name(ptr, info.ID, sanitise(wanted))
	root := map[string]any{"type": "object", "properties": tp.props}
	if len(tp.required) > 0 {
		root["required"] = tp.required
	}
	if defs := closure(tp.deps); len(defs) > 0 {
		root["$defs"] = defs
	}
	desc := description(info, op)
	decl := &genai.FunctionDeclaration{Name: name, Description: desc, ParametersJsonSchema: root}
	ret, kind := b.returns(op, ptr)
	if ret != nil {
		decl.ResponseJsonSchema = ret
	}
	resultKey := "result"
	if kind == "object" {
		resultKey = ""
	}
	return &Op{
		name: name, desc: desc,
		decl:      decl,
		resultKey: resultKey,
		method:    info.Method,
		path:      info.Path,
		server:    server,
		params:    tp.params,
		required:  tp.required,
		body:      bd,
		sec:       sec,
		auth:      b.auth,
		client:    b.cfg.client(),
		maxBody:   b.maxResponse(),
	}, nil
}

// merged lists an operation's parameters: the path's, with those the
// operation redefines (same name and location) replaced, then the
// operation's own.
func merged(info Operation, item *v3.PathItem, op *v3.Operation) ([]located, error) {
	var all []located
	for i, p := range item.Parameters {
		all = append(all, located{p, pointer("paths", info.Path, "parameters", strconv.Itoa(i))})
	}
	for i, p := range op.Parameters {
		lp := child(info.Pointer, "parameters", strconv.Itoa(i))
		if p == nil {
			return nil, docErrorf(lp, "the parameter is empty")
		}
		if j := slices.IndexFunc(all, func(l located) bool { return l.p != nil && l.p.Name == p.Name && l.p.In == p.In }); j >= 0 {
			all[j] = located{p, lp}
			continue
		}
		all = append(all, located{p, lp})
	}
	return all, nil
}

// parameter adds one parameter to tp, unless the specification says to
// ignore it or a credential goes there (hidden).
func (b *builder) parameter(tp *toolParams, l located, hidden map[string]bool) error {
	p := l.p
	switch {
	case p == nil:
		return docErrorf(l.ptr, "the parameter is empty")
	case p.Name == "":
		return docErrorf(l.ptr, "the parameter has no name")
	}
	switch p.In {
	case "path", "query", "header", "cookie":
	case "":
		return docErrorf(l.ptr, "parameter %q has no \"in\"", p.Name)
	default:
		return docErrorf(child(l.ptr, "in"), "parameter %q is in %q; it must be in path, query, header or cookie", p.Name, p.In)
	}
	if p.In == "header" && ignoredHeaders[strings.ToLower(p.Name)] || hidden[p.In+"\x00"+strings.ToLower(p.Name)] {
		return nil
	}
	pa := param{name: p.Name, in: p.In, style: p.Style, allowReserved: p.AllowReserved, required: p.In == "path" || (p.Required != nil && *p.Required)}
	if err := pa.setStyle(p.Explode, l.ptr); err != nil {
		return err
	}
	var sp *base.SchemaProxy
	switch {
	case p.Schema != nil:
		sp = p.Schema
	case p.Content != nil && p.Content.Len() > 0:
		mt := p.Content.First()
		sp, pa.asJSON = mt.Value().Schema, isJSON(mt.Key())
	}
	s, deps, err := b.schemaOf(sp, child(l.ptr, "schema"))
	if err != nil {
		return err
	}
	pa.prop = p.Name
	if tp.taken[pa.prop] {
		pa.prop = p.In + "_" + p.Name
	}
	if tp.taken[pa.prop] {
		return docErrorf(l.ptr, "parameter %q in %s is declared twice", p.Name, p.In)
	}
	tp.taken[pa.prop] = true
	var mtEx *v3.MediaType
	if p.Schema == nil && p.Content != nil && p.Content.Len() > 0 {
		mtEx = p.Content.First().Value()
	}
	ex, err := b.declaredExamples(l.ptr, p.Example, p.Examples)
	if err != nil {
		return err
	}
	if mtEx != nil && len(ex) == 0 {
		if ex, err = b.declaredExamples(child(l.ptr, "content", p.Content.First().Key()), mtEx.Example, mtEx.Examples); err != nil {
			return err
		}
	}
	tp.props[pa.prop] = withExamples(annotate(s, p.Description, p.Deprecated), ex)
	tp.deps = append(tp.deps, deps...)
	if pa.required {
		tp.required = append(tp.required, pa.prop)
	}
	tp.params = append(tp.params, pa)
	return nil
}

// checkTemplate checks that the path template and the path parameters
// name each other.
func checkTemplate(info Operation, params []param) error {
	for _, m := range templateVar.FindAllStringSubmatch(info.Path, -1) {
		if !slices.ContainsFunc(params, func(p param) bool { return p.in == "path" && p.name == m[1] }) {
			return docErrorf(info.Pointer, "the path template names {%s} but the operation declares no path parameter %q", m[1], m[1])
		}
	}
	for _, p := range params {
		if p.in == "path" && !strings.Contains(info.Path, "{"+p.name+"}") {
			return docErrorf(info.Pointer, "path parameter %q does not occur in the path template %q", p.name, info.Path)
		}
	}
	return nil
}

func (b *builder) maxResponse() int64 {
	if b.cfg.MaxResponseBytes > 0 {
		return b.cfg.MaxResponseBytes
	}
	return DefaultMaxResponseBytes
}

// setStyle checks the parameter's style against its location and sets the
// default style and explode.
func (p *param) setStyle(explode *bool, ptr string) error {
	allowed := map[string][]string{
		"path":   {"simple", "label", "matrix"},
		"query":  {"form", "spaceDelimited", "pipeDelimited", "deepObject"},
		"header": {"simple"},
		"cookie": {"form"},
	}[p.in]
	if p.style == "" {
		p.style = allowed[0]
	}
	if !slices.Contains(allowed, p.style) {
		return docErrorf(child(ptr, "style"), "style %q is not allowed for a parameter in %s; use one of %s", p.style, p.in, strings.Join(allowed, ", "))
	}
	p.explode = p.style == "form"
	if explode != nil {
		p.explode = *explode
	}
	return nil
}

// schemaOf converts the schema behind a proxy; nil gives the empty schema.
func (b *builder) schemaOf(sp *base.SchemaProxy, ptr string) (any, []*def, error) {
	if sp == nil || sp.GoLow() == nil {
		return map[string]any{}, nil, nil
	}
	low := sp.GoLow()
	node := low.GetValueNode()
	if node == nil {
		return map[string]any{}, nil, nil
	}
	return b.conv.schema(node, low.GetIndex(), ptr)
}

// annotate adds a parameter's description and deprecation to its schema
// without changing a shared one.
func annotate(s any, desc string, deprecated bool) any {
	m, ok := s.(map[string]any)
	if !ok || (desc == "" && !deprecated) {
		return s
	}
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	if desc != "" {
		out["description"] = desc
	}
	if deprecated {
		out["deprecated"] = true
	}
	return out
}

// declaredExamples converts the example values a parameter or media type
// declares beside its schema: example, then each of examples that holds a
// value. An example object given by reference is left out (the document's
// components/examples are not read), and so is one with only an
// externalValue.
func (b *builder) declaredExamples(ptr string, example *yaml.Node, examples *orderedmap.Map[string, *base.Example]) ([]any, error) {
	var out []any
	if example != nil {
		v, err := b.conv.data(example, child(ptr, "example"), 0)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if examples != nil {
		for name, ex := range examples.FromOldest() {
			if ex == nil || ex.Value == nil || ex.IsReference() {
				continue
			}
			v, err := b.conv.data(ex.Value, child(ptr, "examples", name, "value"), 0)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// withExamples adds examples to a parameter's schema, without changing a
// shared one, unless the schema declares examples of its own.
func withExamples(s any, examples []any) any {
	m, ok := s.(map[string]any)
	if !ok || len(examples) == 0 {
		return s
	}
	if _, has := m["examples"]; has {
		return s
	}
	if _, has := m["example"]; has {
		return s
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out["examples"] = examples
	return out
}

// description builds a tool's description from the operation's summary and
// description.
func description(info Operation, op *v3.Operation) string {
	var parts []string
	if info.Deprecated {
		parts = append(parts, "Deprecated.")
	}
	if s := strings.TrimSpace(op.Summary); s != "" {
		parts = append(parts, s)
	}
	if d := strings.TrimSpace(op.Description); d != "" && d != strings.TrimSpace(op.Summary) {
		parts = append(parts, d)
	}
	if len(parts) == 0 || (len(parts) == 1 && info.Deprecated) {
		parts = append(parts, info.Method+" "+info.Path)
	}
	return strings.Join(parts, "\n\n")
}

// isJSON reports whether a media type is JSON.
func isJSON(mt string) bool {
	mt = strings.ToLower(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]))
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// body chooses the request body's media type and adds its tool
// parameters to props.
func (b *builder) body(rb *v3.RequestBody, ptr string, tp *toolParams) (*body, error) {
	if rb.Content == nil || rb.Content.Len() == 0 {
		return nil, nil
	}
	bd := &body{required: rb.Required != nil && *rb.Required}
	mt := bd.pickMediaType(rb)
	var s any = map[string]any{}
	var deps []*def
	if mt != nil {
		var err error
		s, deps, err = b.schemaOf(mt.Schema, child(ptr, "content", bd.mediaType, "schema"))
		if err != nil {
			return nil, err
		}
	}
	if bd.kind == bodyRaw && isEmptySchema(s) {
		s = map[string]any{"type": "string"}
	}
	var bodyEx []any
	if mt != nil {
		var err error
		if bodyEx, err = b.declaredExamples(child(ptr, "content", bd.mediaType), mt.Example, mt.Examples); err != nil {
			return nil, err
		}
	}
	resolved, via := b.conv.deref(s)
	if obj, ok := flattenable(resolved); ok && bd.kind != bodyRaw && !clashes(obj, tp.taken) {
		// The body's own definition is spent; what its properties
		// refer to is still needed.
		if via != nil {
			deps = via.deps
		}
		fields, _ := obj["properties"].(map[string]any)
		req := map[string]bool{}
		if bd.required {
			for _, r := range asStrings(obj["required"]) {
				req[r] = true
			}
		}
		// A body example that is an object gives each flattened field
		// its value.
		var fieldEx map[string]any
		if len(bodyEx) > 0 {
			fieldEx, _ = bodyEx[0].(map[string]any)
		}
		for _, k := range sortedKeys(fields) {
			tp.props[k] = fields[k]
			if v, ok := fieldEx[k]; ok {
				tp.props[k] = withExamples(fields[k], []any{v})
			}
			tp.taken[k] = true
			bd.fields = append(bd.fields, k)
			if req[k] {
				tp.required = append(tp.required, k)
			}
		}
		if bd.kind == bodyMultipart {
			bd.binary, bd.partTypes = b.parts(fields, mt)
		}
		tp.deps = append(tp.deps, deps...)
		return bd, nil
	}
	bd.prop = "body"
	for i := 2; tp.taken[bd.prop]; i++ {
		bd.prop = "body_" + strconv.Itoa(i)
	}
	tp.taken[bd.prop] = true
	tp.props[bd.prop] = withExamples(annotate(s, rb.Description, false), bodyEx)
	if bd.required {
		tp.required = append(tp.required, bd.prop)
	}
	tp.deps = append(tp.deps, deps...)
	return bd, nil
}

// pickMediaType chooses the body's media type: JSON, else a form, else
// multipart, else the first declared.
func (b *body) pickMediaType(rb *v3.RequestBody) *v3.MediaType {
	for _, pick := range []func(string) (bodyKind, bool){
		func(k string) (bodyKind, bool) { return bodyJSON, isJSON(k) },
		func(k string) (bodyKind, bool) { return bodyForm, mediaIs(k, "application/x-www-form-urlencoded") },
		func(k string) (bodyKind, bool) { return bodyMultipart, mediaIs(k, "multipart/form-data") },
		func(k string) (bodyKind, bool) { return bodyRaw, true },
	} {
		for k, v := range rb.Content.FromOldest() {
			if kind, ok := pick(k); ok {
				b.kind, b.mediaType = kind, k
				return v
			}
		}
	}
	return nil
}

// parts finds the multipart fields sent as files, and declared part types.
func (b *builder) parts(fields map[string]any, mt *v3.MediaType) (map[string]bool, map[string]string) {
	bin := map[string]bool{}
	types := map[string]string{}
	for k, f := range fields {
		r, _ := b.conv.deref(f)
		fm, _ := r.(map[string]any)
		if fm["format"] == "binary" || fm["format"] == "byte" || fm["contentMediaType"] != nil || fm["contentEncoding"] != nil {
			bin[k] = true
		}
	}
	if mt != nil {
		for k, e := range mt.Encoding.FromOldest() {
			if e != nil && e.ContentType != "" {
				types[k] = e.ContentType
			}
		}
	}
	return bin, types
}

func mediaIs(mt, want string) bool {
	return strings.EqualFold(strings.TrimSpace(strings.SplitN(mt, ";", 2)[0]), want)
}

// flattenable reports whether a body schema is a plain object whose
// properties can become tool parameters of their own.
func flattenable(s any) (map[string]any, bool) {
	m, ok := s.(map[string]any)
	if !ok {
		return nil, false
	}
	props, ok := m["properties"].(map[string]any)
	if !ok || len(props) == 0 {
		return nil, false
	}
	if t, ok := m["type"]; ok && t != "object" {
		return nil, false
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "not", "if", "$ref", "patternProperties", "dependentSchemas", "unevaluatedProperties"} {
		if _, ok := m[k]; ok {
			return nil, false
		}
	}
	if ap, ok := m["additionalProperties"]; ok && ap != false {
		return nil, false
	}
	return m, true
}

func clashes(obj map[string]any, taken map[string]bool) bool {
	props, _ := obj["properties"].(map[string]any)
	for k := range props {
		if taken[k] {
			return true
		}
	}
	return false
}

func isEmptySchema(s any) bool {
	m, ok := s.(map[string]any)
	return ok && len(m) == 0
}

// server picks the base URL of an operation: Config.BaseURL, else the
// first server of the operation, its path or the document, with its
// variables filled.
func (b *builder) server(op *v3.Operation, item *v3.PathItem, path, ptr string) (*url.URL, error) {
	if b.cfg.BaseURL != "" {
		u, err := url.Parse(b.cfg.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("openapi: Config.BaseURL %q is not an absolute http or https URL", b.cfg.BaseURL)
		}
		return u, nil
	}
	servers, sptr := b.doc.Servers, "/servers"
	if len(item.Servers) > 0 {
		servers, sptr = item.Servers, pointer("paths", path, "servers")
	}
	if len(op.Servers) > 0 {
		servers, sptr = op.Servers, child(ptr, "servers")
	}
	raw := "/"
	if len(servers) > 0 && servers[0] != nil {
		var err error
		raw, err = b.fill(servers[0], child(sptr, "0"))
		if err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, docErrorf(child(sptr, "0", "url"), "the server URL %q is not a URL: %v", raw, err)
	}
	if !u.IsAbs() && b.src.base != nil {
		u = b.src.base.ResolveReference(u)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		de := docErrorf(sptr, "no absolute http or https server URL (got %q); set Config.BaseURL", raw)
		de.err = ErrNoServerURL
		return nil, de
	}
	return u, nil
}

// fill substitutes a server's variables.
func (b *builder) fill(s *v3.Server, ptr string) (string, error) {
	var err error
	out := templateVar.ReplaceAllStringFunc(s.URL, func(m string) string {
		name := m[1 : len(m)-1]
		var v *v3.ServerVariable
		if s.Variables != nil {
			v, _ = s.Variables.Get(name)
		}
		val, given := b.cfg.ServerVariables[name]
		switch {
		case v == nil && !given:
			err = docErrorf(child(ptr, "url"), "server variable {%s} is not declared; set it in Config.ServerVariables", name)
		case !given:
			val = v.Default
		case v != nil && len(v.Enum) > 0 && !slices.Contains(v.Enum, val):
			err = fmt.Errorf("openapi: Config.ServerVariables[%q] = %q is not one of %s", name, val, strings.Join(v.Enum, ", "))
		}
		return val
	})
	return out, err
}

// deref follows a rewritten "#/$defs/name" reference to its schema, and
// returns the last definition it went through.
func (c *converter) deref(s any) (any, *def) {
	var via *def
	for range 32 {
		m, ok := s.(map[string]any)
		if !ok || len(m) != 1 {
			break
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, defsPrefix) {
			break
		}
		d := c.byName(strings.TrimPrefix(ref, defsPrefix))
		if d == nil {
			break
		}
		s, via = d.value, d
	}
	return s, via
}

func (c *converter) byName(name string) *def { return c.named[name] }

func asStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, e := range l {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// successResponse is the response whose body a tool returns, with its
// pointer, chosen by successCode; it is nil when there is none.
func successResponse(op *v3.Operation, ptr string) (*v3.Response, string) {
	if op.Responses == nil {
		return nil, ""
	}
	var keys []string
	if op.Responses.Codes != nil {
		keys = slices.Collect(op.Responses.Codes.KeysFromOldest())
	}
	if op.Responses.Default != nil {
		keys = append(keys, "default")
	}
	code := successCode(keys)
	var r *v3.Response
	switch {
	case code == "":
		return nil, ""
	case code == "default":
		r = op.Responses.Default
	default:
		r = op.Responses.Codes.GetOrZero(code)
	}
	if r == nil {
		return nil, ""
	}
	return r, child(ptr, "responses", code)
}

// successCode picks, of an operation's response keys, the one whose body a
// tool returns: the lowest numbered 2xx code, else the 2XX range, else
// default. It is "" when there is none of these.
func successCode(keys []string) string {
	best, bestRank := "", ""
	for _, k := range keys {
		if len(k) != 3 || k[0] != '2' {
			continue
		}
		rank := k
		if k[1:] == "XX" || k[1:] == "xx" {
			rank = "2XX" // after every numbered code
		} else if !isDigits(k[1:]) {
			continue
		}
		if best == "" || rank < bestRank {
			best, bestRank = k, rank
		}
	}
	if best == "" && slices.Contains(keys, "default") {
		return "default"
	}
	return best
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// returns is the declared result of an operation: the JSON schema of its
// success response's JSON body (the first JSON media type), with the $defs
// it reaches, and the body's kind (see bodyKind). The schema is nil when
// the document declares no JSON body, an empty schema or one that cannot
// be converted: the stub's return is Any then.
func (b *builder) returns(op *v3.Operation, ptr string) (map[string]any, string) {
	resp, rptr := successResponse(op, ptr)
	if resp == nil || resp.Content == nil {
		return nil, ""
	}
	for mt, m := range resp.Content.FromOldest() {
		if !isJSON(mt) || m == nil || m.Schema == nil {
			continue
		}
		s, deps, err := b.schemaOf(m.Schema, child(rptr, "content", mt, "schema"))
		if err != nil || isEmptySchema(s) {
			return nil, ""
		}
		sm, ok := s.(map[string]any)
		if !ok {
			return nil, ""
		}
		root := make(map[string]any, len(sm)+1)
		for k, v := range sm {
			root[k] = v
		}
		if defs := closure(deps); len(defs) > 0 {
			root["$defs"] = defs
		}
		return root, b.bodyKind(s)
	}
	return nil, ""
}

// bodyKind says whether a body of schema s is always a JSON object
// ("object"), never one ("other"), or may be either or cannot be told
// (""). A schema without a type is an object when it has properties or an
// allOf branch that is one, and what all its anyOf or oneOf branches are;
// OpenAPI 3.0's nullable makes an object schema one that may be null.
func (b *builder) bodyKind(s any) string { return b.kindOf(s, 0) }

func (b *builder) kindOf(s any, depth int) string {
	if depth > 32 {
		return ""
	}
	v, _ := b.conv.deref(s)
	m, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	types := asStrings(m["type"])
	if t, ok := m["type"].(string); ok {
		types = []string{t}
	}
	if nullable, _ := m["nullable"].(bool); nullable && slices.Contains(types, "object") {
		return "" // OpenAPI 3.0's nullable object
	}
	switch {
	case slices.Equal(types, []string{"object"}):
		return "object"
	case slices.Contains(types, "object"):
		return "" // an object, or null or another type
	case len(types) > 0:
		return "other"
	}
	if all, ok := m["allOf"].([]any); ok {
		for _, x := range all {
			if k := b.kindOf(x, depth+1); k != "" {
				return k
			}
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := m[key].([]any)
		if !ok || len(alts) == 0 {
			continue
		}
		k := b.kindOf(alts[0], depth+1)
		for _, x := range alts[1:] {
			if b.kindOf(x, depth+1) != k {
				return ""
			}
		}
		return k
	}
	if _, ok := m["properties"]; ok {
		return "object"
	}
	return ""
}
