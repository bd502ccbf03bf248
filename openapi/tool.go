package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"google.golang.org/genai"
)

// Op is one operation of the document: the declaration a model or Code
// Mode sees, and the HTTP call that runs it on the host. It is safe for
// concurrent use.
type Op struct {
	name, desc string
	decl       *genai.FunctionDeclaration
	method     string
	path       string   // template
	server     *url.URL // base URL
	params     []param
	required   []string // tool parameters that must be given
	body       *body
	sec        []requirement
	auth       *authenticator
	client     *http.Client
	maxBody    int64
	resultKey  string // "" when the declared body is always an object
}

// Name is the operation's tool name (see the package documentation).
func (o *Op) Name() string { return o.name }

// Description is the operation's summary and description.
func (o *Op) Description() string { return o.desc }

// Declaration returns the operation's function declaration; its
// ParametersJsonSchema is a JSON Schema object built from the operation,
// its ResponseJsonSchema the success body's schema, when declared.
func (o *Op) Declaration() *genai.FunctionDeclaration { return o.decl }

// ResultKey is the key under which Call returns the response body:
// "result", or "" when the operation's declared success body is always a
// JSON object and Call returns that object itself.
func (o *Op) ResultKey() string { return o.resultKey }

// Call sends the operation's request built from args (a JSON object: a
// map or anything that marshals to one) and returns the response body.
// When the document declares the success body as always a JSON object,
// that object is the result as it is (a body that is not an object after
// all comes under "result"). Every other operation (a declared array,
// string, number, boolean or nullable body, or none declared) returns
// every body, objects included, as {"result": body}: [Op.ResultKey] says
// which. A status outside 2xx is a *StatusError.
func (o *Op) Call(ctx context.Context, args any) (map[string]any, error) {
	a, err := argsMap(args)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", o.name, err)
	}
	req, err := o.request(ctx, a)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %w", o.name, err)
	}
	if err := o.auth.apply(ctx, req, o.sec); err != nil {
		return nil, fmt.Errorf("tool %s: %w", o.name, err)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %s %s: %w", o.name, o.method, req.URL.Path, redact(err, req.URL))
	}
	defer resp.Body.Close()
	value, err := readBody(resp, o.maxBody)
	if err != nil {
		return nil, fmt.Errorf("tool %s: %s %s: %w", o.name, o.method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Code: resp.StatusCode, Method: o.method, Path: req.URL.Path, Body: value}
	}
	if m, ok := value.(map[string]any); ok && o.resultKey == "" {
		return m, nil
	}
	return map[string]any{"result": value}, nil
}

// redact drops the query from a transport error's URL: it may carry an
// API key.
func redact(err error, u *url.URL) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		c := *u
		c.RawQuery = ""
		return &url.Error{Op: ue.Op, URL: c.Redacted(), Err: ue.Err}
	}
	return err
}

func argsMap(args any) (map[string]any, error) {
	switch a := args.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("the arguments are not a JSON object: %w", err)
	}
	return m, nil
}

// request builds the HTTP request for args.
func (o *Op) request(ctx context.Context, args map[string]any) (*http.Request, error) {
	for _, r := range o.required {
		if v, ok := args[r]; !ok || v == nil {
			return nil, fmt.Errorf("the required parameter %q is missing", r)
		}
	}
	var err error
	path := o.path
	var query, cookies []string
	header := http.Header{}
	for _, p := range o.params {
		v, ok := args[p.prop]
		if !ok || v == nil {
			if p.required {
				return nil, fmt.Errorf("the required parameter %q is missing", p.prop)
			}
			continue
		}
		switch p.in {
		case "path":
			path = strings.ReplaceAll(path, "{"+p.name+"}", pathValue(p, v))
		case "query":
			query = append(query, queryPairs(p, v)...)
		case "header":
			hv := headerValue(p, v)
			if strings.ContainsAny(hv, "\r\n\x00") {
				return nil, fmt.Errorf("header parameter %q contains a line break or NUL", p.prop)
			}
			header.Add(p.name, hv)
		case "cookie":
			cookies = append(cookies, cookiePairs(p, v)...)
		}
	}
	for _, seg := range strings.Split(path, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("the path %q has a %q segment; path parameters cannot name . or ..", path, seg)
		}
	}
	u := *o.server
	u.RawPath = strings.TrimSuffix(o.server.EscapedPath(), "/") + path
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return nil, fmt.Errorf("the path %q is not a valid URL path: %w", u.RawPath, err)
	}
	if len(query) > 0 {
		if u.RawQuery != "" {
			u.RawQuery += "&"
		}
		u.RawQuery += strings.Join(query, "&")
	}
	var rd io.Reader
	contentType := ""
	if o.body != nil {
		data, ct, present, err := o.body.encode(args)
		if err != nil {
			return nil, err
		}
		if present {
			rd, contentType = bytes.NewReader(data), ct
		} else if o.body.required {
			return nil, fmt.Errorf("the request body is required")
		}
	}
	req, err := http.NewRequestWithContext(ctx, o.method, u.String(), rd)
	if err != nil {
		return nil, err
	}
	req.URL = &u
	for k, vs := range header {
		req.Header[k] = vs
	}
	if len(cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(cookies, "; "))
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json, */*;q=0.8")
	return req, nil
}

// encode builds the body from args; present is false when args hold no
// part of it.
func (b *body) encode(args map[string]any) (data []byte, contentType string, present bool, err error) {
	var v any
	if b.prop != "" {
		x, ok := args[b.prop]
		if !ok {
			return nil, "", false, nil
		}
		v = x
	} else {
		obj := map[string]any{}
		for _, f := range b.fields {
			if x, ok := args[f]; ok {
				obj[f] = x
			}
		}
		if len(obj) == 0 && !b.required {
			return nil, "", false, nil
		}
		v = obj
	}
	switch b.kind {
	case bodyJSON:
		data, err := json.Marshal(v)
		if err != nil {
			return nil, "", false, fmt.Errorf("the request body is not JSON: %w", err)
		}
		return data, b.mediaType, true, nil
	case bodyForm:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", false, fmt.Errorf("the form body must be an object")
		}
		vals := url.Values{}
		for _, k := range sortedKeys(obj) {
			items, _, _ := shape(obj[k])
			if items != nil {
				for _, x := range items {
					vals.Add(k, text(x))
				}
				continue
			}
			vals.Set(k, text(obj[k]))
		}
		return []byte(vals.Encode()), "application/x-www-form-urlencoded", true, nil
	case bodyMultipart:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, "", false, fmt.Errorf("the multipart body must be an object")
		}
		return b.multipart(obj)
	}
	s, ok := v.(string)
	if !ok {
		s = compactJSON(v)
	}
	return []byte(s), b.mediaType, true, nil
}

func (b *body) multipart(obj map[string]any) ([]byte, string, bool, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, k := range sortedKeys(obj) {
		v := obj[k]
		h := textproto.MIMEHeader{}
		disp := mime.FormatMediaType("form-data", map[string]string{"name": k})
		ct := b.partTypes[k]
		var data []byte
		switch {
		case b.binary[k]:
			disp = mime.FormatMediaType("form-data", map[string]string{"name": k, "filename": k})
			if ct == "" {
				ct = "application/octet-stream"
			}
			data = []byte(text(v))
		default:
			items, obj, _ := shape(v)
			if items != nil || obj != nil {
				if ct == "" {
					ct = "application/json"
				}
				data = []byte(compactJSON(v))
			} else {
				data = []byte(text(v))
			}
		}
		h.Set("Content-Disposition", disp)
		if ct != "" {
			h.Set("Content-Type", ct)
		}
		pw, err := w.CreatePart(h)
		if err != nil {
			return nil, "", false, err
		}
		if _, err := pw.Write(data); err != nil {
			return nil, "", false, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", false, err
	}
	return buf.Bytes(), w.FormDataContentType(), true, nil
}

// readBody reads and decodes a response body of at most limit bytes: JSON
// when the media type says so (or the body parses as JSON with no media
// type), else text when it is valid UTF-8 text, else bytes.
func readBody(resp *http.Response, limit int64) (any, error) {
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading the response: %w", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the response is larger than %d bytes (Config.MaxResponseBytes); ask for less, for example with paging parameters", limit)
	}
	return decode(data, resp.Header.Get("Content-Type"))
}

func decode(data []byte, contentType string) (any, error) {
	if len(data) == 0 {
		return nil, nil
	}
	mt, params, _ := mime.ParseMediaType(contentType)
	if isJSON(mt) || mt == "" {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		err := dec.Decode(&v)
		if err == nil && !dec.More() {
			return v, nil
		}
		if mt != "" {
			return nil, fmt.Errorf("the response says it is JSON but does not parse: %w", err)
		}
	}
	textual := strings.HasPrefix(mt, "text/") || mt == "" || slices.Contains([]string{"application/xml", "application/yaml", "application/x-yaml", "application/javascript"}, mt) ||
		strings.HasSuffix(mt, "+xml") || params["charset"] != ""
	if textual && utf8.Valid(data) {
		return string(data), nil
	}
	return data, nil
}
