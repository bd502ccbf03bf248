package openapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seen is one request as the server received it.
type seen struct {
	Method, Path, Query string
	Header              http.Header
	Body                string
}

// recorder is a loopback HTTP server that records requests and answers
// with the handler's reply.
type recorder struct {
	srv   *httptest.Server
	mu    sync.Mutex
	reqs  []seen
	reply func(w http.ResponseWriter, r *http.Request)
}

func newRecorder(t *testing.T, reply func(w http.ResponseWriter, r *http.Request)) *recorder {
	t.Helper()
	rec := &recorder{reply: reply}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, seen{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Clone(), string(b)})
		rec.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		rec.reply(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) last(t *testing.T) seen {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("the server received no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

func (rec *recorder) count() int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return len(rec.reqs)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// hubServer answers like a tiny code host.
func hubServer(t *testing.T) *recorder {
	return newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/repos/octo cat/hello" && r.Method == "GET":
			writeJSON(w, 200, map[string]any{"full_name": "octo cat/hello", "private": false})
		case strings.HasSuffix(r.URL.Path, "/issues") && r.Method == "GET":
			writeJSON(w, 200, []any{map[string]any{"number": 1, "title": "first"}})
		case strings.HasSuffix(r.URL.Path, "/issues") && r.Method == "POST":
			writeJSON(w, 201, map[string]any{"number": 2})
		default:
			writeJSON(w, 404, map[string]any{"message": "Not Found"})
		}
	})
}

func TestHubRequests(t *testing.T) {
	rec := hubServer(t)
	tl := tools(t, load(t, Config{File: "testdata/hub.yaml", BaseURL: rec.srv.URL, Auth: map[string]Credential{"hubToken": {Token: "s3cret"}}}))
	ctx := t.Context()

	got, err := tl["repos_get"].Call(ctx, map[string]any{"owner": "octo cat", "repo": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"full_name": "octo cat/hello", "private": false}, got); diff != "" {
		t.Errorf("a JSON object comes back as it is (-want +got):\n%s", diff)
	}
	r := rec.last(t)
	if r.Path != "/repos/octo%20cat/hello" || r.Header.Get("Authorization") != "Bearer s3cret" {
		t.Errorf("request %s with Authorization %q", r.Path, r.Header.Get("Authorization"))
	}

	got, err = tl["issues_list_for_repo"].Call(ctx, map[string]any{"owner": "o", "repo": "r", "state": "closed", "labels": []any{"bug", "ui"}, "per_page": 5.0})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"result": []any{map[string]any{"number": json.Number("1"), "title": "first"}}}, got); diff != "" {
		t.Errorf("a JSON array comes back under result (-want +got):\n%s", diff)
	}
	if r := rec.last(t); r.Query != "state=closed&labels=bug,ui&per_page=5" {
		t.Errorf("query = %q", r.Query)
	}

	if _, err := tl["issues_create"].Call(ctx, map[string]any{"owner": "o", "repo": "r", "title": "T", "body": "B", "labels": []any{"x"}}); err != nil {
		t.Fatal(err)
	}
	r = rec.last(t)
	if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || r.Body != `{"body":"B","labels":["x"],"title":"T"}` {
		t.Errorf("create: %s %s %q", r.Method, r.Header.Get("Content-Type"), r.Body)
	}

	_, err = tl["repos_get"].Call(ctx, map[string]any{"owner": "nobody", "repo": "nothing"})
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a *StatusError", err)
	}
	if se.StatusCode() != 404 || !cmp.Equal(map[string]any{"message": "Not Found"}, se.ResponseBody()) {
		t.Errorf("StatusError %d %v", se.StatusCode(), se.ResponseBody())
	}
	if want := `GET /repos/nobody/nothing: 404 Not Found: {"message":"Not Found"}`; se.Error() != want {
		t.Errorf("Error() = %q, want %q", se.Error(), want)
	}
}

func TestRequestsRefused(t *testing.T) {
	rec := hubServer(t)
	tl := tools(t, load(t, Config{File: "testdata/hub.yaml", BaseURL: rec.srv.URL}))
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"repos_get", map[string]any{"owner": "..", "repo": "x"}, `has a ".." segment`},
		{"repos_get", map[string]any{"owner": ".", "repo": "x"}, `has a "." segment`},
		{"repos_get", map[string]any{"owner": "o"}, `required parameter "repo" is missing`},
		{"issues_create", map[string]any{"owner": "o", "repo": "r"}, `required parameter "title" is missing`},
	}
	for _, c := range cases {
		_, err := tl[c.tool].Call(t.Context(), c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %v: err = %v, want %q", c.tool, c.args, err, c.want)
		}
	}
	if n := rec.count(); n != 0 {
		t.Errorf("%d refused requests reached the server", n)
	}
}

func TestPetstoreRequests(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "DELETE" {
			w.WriteHeader(204)
			return
		}
		writeJSON(w, 200, map[string]any{"ok": true})
	})
	tl := tools(t, load(t, Config{File: "testdata/petstore.yaml", BaseURL: rec.srv.URL + "/v1/", Auth: map[string]Credential{"shopKey": {APIKey: "k-123"}}}))
	if _, err := tl["place_order"].Call(t.Context(), map[string]any{"petId": 7.0, "notes": []any{"a b", "c&d"}}); err != nil {
		t.Fatal(err)
	}
	r := rec.last(t)
	if r.Path != "/v1/store/orders" || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || r.Body != "notes=a+b&notes=c%26d&petId=7" {
		t.Errorf("form request %s %q %q", r.Path, r.Header.Get("Content-Type"), r.Body)
	}
	if r.Header.Get("X-Shop-Key") != "k-123" {
		t.Errorf("X-Shop-Key = %q", r.Header.Get("X-Shop-Key"))
	}
	got, err := tl["delete_pet"].Call(t.Context(), map[string]any{"petId": 7.0})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"result": nil}, got); diff != "" {
		t.Errorf("an empty answer (-want +got):\n%s", diff)
	}
	// list_pets declares no security: the key is not sent.
	if _, err := tl["list_pets"].Call(t.Context(), map[string]any{"limit": 2.0, "tags": []any{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if r := rec.last(t); r.Header.Get("X-Shop-Key") != "" || r.Query != "limit=2&tags=a,b" {
		t.Errorf("list_pets: key %q, query %q", r.Header.Get("X-Shop-Key"), r.Query)
	}
}

const paramsDoc = `openapi: 3.1.0
info: {title: t, version: "1"}
servers: [{url: "https://x.example"}]
paths:
  /upload/{id}:
    post:
      operationId: upload
      parameters:
        - {name: id, in: path, required: true, style: matrix, explode: true, schema: {type: object}}
        - {name: X-Trace, in: header, schema: {type: array, items: {type: string}}}
        - {name: Accept, in: header, schema: {type: string}}
        - {name: session, in: cookie, schema: {type: string}}
        - {name: filter, in: query, style: deepObject, schema: {type: object}}
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              properties:
                file: {type: string, format: binary}
                meta: {type: object}
                name: {type: string}
            encoding:
              file: {contentType: image/png}
      responses: {"200": {description: ok}}
`

func TestParameterLocationsAndMultipart(t *testing.T) {
	var parts map[string][2]string
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		parts = map[string][2]string{}
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		for {
			p, err := mr.NextPart()
			if err != nil {
				break
			}
			b, _ := io.ReadAll(p)
			parts[p.FormName()] = [2]string{p.Header.Get("Content-Type") + " " + p.FileName(), string(b)}
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "stored")
	})
	tl := tools(t, load(t, Config{Spec: []byte(paramsDoc), BaseURL: rec.srv.URL}))
	props := schemaJSON(t, tl["upload"])["properties"].(map[string]any)
	if _, ok := props["Accept"]; ok {
		t.Error("an Accept header parameter is a tool parameter; the specification says to ignore it")
	}
	got, err := tl["upload"].Call(t.Context(), map[string]any{
		"id":      map[string]any{"a": "1", "b": "2"},
		"X-Trace": []any{"t1", "t2"},
		"session": "abc",
		"filter":  map[string]any{"kind": "png"},
		"file":    "PNGDATA",
		"meta":    map[string]any{"w": 1.0},
		"name":    "pic",
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"result": "stored"}, got); diff != "" {
		t.Errorf("a text answer (-want +got):\n%s", diff)
	}
	r := rec.last(t)
	if r.Path != "/upload/;a=1;b=2" || r.Header.Get("X-Trace") != "t1,t2" || r.Header.Get("Cookie") != "session=abc" || r.Query != "filter%5Bkind%5D=png" {
		t.Errorf("path %q, X-Trace %q, Cookie %q, query %q", r.Path, r.Header.Get("X-Trace"), r.Header.Get("Cookie"), r.Query)
	}
	want := map[string][2]string{
		"file": {"image/png file", "PNGDATA"},
		"meta": {"application/json ", `{"w":1}`},
		"name": {" ", "pic"},
	}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Errorf("multipart parts (-want +got):\n%s", diff)
	}
	_, err = tl["upload"].Call(t.Context(), map[string]any{"id": map[string]any{}, "X-Trace": []any{"a\r\nEvil: 1"}})
	if err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("header injection: err = %v", err)
	}
}

func TestResponseDecoding(t *testing.T) {
	var ctype, body string
	var code int
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if ctype != "" {
			w.Header().Set("Content-Type", ctype)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	})
	tl := tools(t, load(t, Config{File: "testdata/petstore.yaml", BaseURL: rec.srv.URL, MaxResponseBytes: 64}))
	cases := []struct {
		name, ctype, body string
		code              int
		want              map[string]any
		err               string
	}{
		// list_pets declares an array: every body comes under "result".
		{"json", "application/problem+json", `{"a":1}`, 200, map[string]any{"result": map[string]any{"a": json.Number("1")}}, ""},
		{"text", "text/plain; charset=utf-8", "héllo", 200, map[string]any{"result": "héllo"}, ""},
		{"bytes", "application/octet-stream", "\x00\x01", 200, map[string]any{"result": []byte{0, 1}}, ""},
		{"sniffed as text", "", `[1]`, 200, map[string]any{"result": "[1]"}, ""},
		{"bad json", "application/json", `{"a":`, 200, nil, "does not parse"},
		{"too large", "text/plain", strings.Repeat("x", 65), 200, nil, "larger than 64 bytes"},
		{"server error text", "text/plain", "boom", 503, nil, "GET /pets: 503 Service Unavailable: boom"},
	}
	for _, c := range cases {
		ctype, body, code = c.ctype, c.body, c.code
		got, err := tl["list_pets"].Call(t.Context(), map[string]any{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: err = %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

const authDoc = `openapi: 3.0.3
info: {title: t, version: "1"}
servers: [{url: "https://x.example"}]
paths:
  /q:
    get: {operationId: q, security: [{queryKey: []}], responses: {"200": {description: ok}}}
  /c:
    get: {operationId: c, security: [{cookieKey: []}], responses: {"200": {description: ok}}}
  /b:
    get: {operationId: b, security: [{basic: []}], responses: {"200": {description: ok}}}
  /o:
    get: {operationId: o, security: [{oauth: [read]}], responses: {"200": {description: ok}}}
  /either:
    get: {operationId: either, security: [{missing: []}, {basic: []}, {}], responses: {"200": {description: ok}}}
  /open:
    get: {operationId: open, security: [], responses: {"200": {description: ok}}}
components:
  securitySchemes:
    queryKey: {type: apiKey, in: query, name: api_key}
    cookieKey: {type: apiKey, in: cookie, name: sid}
    basic: {type: http, scheme: basic}
    missing: {type: http, scheme: bearer}
    oauth:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: TOKEN_URL
          scopes: {read: read things, write: write things}
`

func TestAuthSchemes(t *testing.T) {
	var tokens atomic.Int32
	var tokenReq seen
	tokenSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(1)
		_ = r.ParseForm()
		u, p, _ := r.BasicAuth()
		tokenReq = seen{Method: r.Method, Query: r.PostForm.Encode(), Body: u + ":" + p}
		writeJSON(w, 200, map[string]any{"access_token": "tok-1", "token_type": "bearer", "expires_in": 3600})
	}))
	t.Cleanup(tokenSrv.Close)
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, 200, map[string]any{}) })
	doc := strings.Replace(authDoc, "TOKEN_URL", tokenSrv.URL+"/token", 1)
	tl := tools(t, load(t, Config{Spec: []byte(doc), BaseURL: rec.srv.URL, Auth: map[string]Credential{
		"queryKey":  {APIKey: "qk"},
		"cookieKey": {APIKey: "ck"},
		"basic":     {Username: "ann", Password: "pw"},
		"oauth":     {ClientID: "app", ClientSecret: "shh", Scopes: []string{"write"}},
	}}))
	call := func(name string) seen {
		t.Helper()
		if _, err := tl[name].Call(t.Context(), map[string]any{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return rec.last(t)
	}
	if r := call("q"); r.Query != "api_key=qk" {
		t.Errorf("query key: %q", r.Query)
	}
	if r := call("c"); r.Header.Get("Cookie") != "sid=ck" {
		t.Errorf("cookie key: %q", r.Header.Get("Cookie"))
	}
	if r := call("b"); r.Header.Get("Authorization") != "Basic YW5uOnB3" {
		t.Errorf("basic: %q", r.Header.Get("Authorization"))
	}
	for range 2 {
		if r := call("o"); r.Header.Get("Authorization") != "Bearer tok-1" {
			t.Errorf("oauth2: %q", r.Header.Get("Authorization"))
		}
	}
	if n := tokens.Load(); n != 1 {
		t.Errorf("%d token requests for two calls, want 1 (the token is cached)", n)
	}
	if tokenReq.Method != "POST" || tokenReq.Query != "grant_type=client_credentials&scope=read+write" || tokenReq.Body != "app:shh" {
		t.Errorf("token request %+v", tokenReq)
	}
	// The first alternative the host can satisfy wins.
	if r := call("either"); r.Header.Get("Authorization") != "Basic YW5uOnB3" {
		t.Errorf("either: %q", r.Header.Get("Authorization"))
	}
	if r := call("open"); r.Header.Get("Authorization") != "" || r.Query != "" {
		t.Errorf("security: [] still sent credentials: %v %q", r.Header, r.Query)
	}
}

func TestSecretsStayOutOfDeclarations(t *testing.T) {
	secrets := []string{"qk-SECRET", "ck-SECRET", "pw-SECRET", "shh-SECRET", "tok-SECRET"}
	ts := load(t, Config{Spec: []byte(authDoc), Auth: map[string]Credential{
		"queryKey":  {APIKey: secrets[0]},
		"cookieKey": {APIKey: secrets[1]},
		"basic":     {Username: "ann", Password: secrets[2]},
		"oauth":     {ClientID: "app", ClientSecret: secrets[3]},
		"missing":   {Token: secrets[4]},
	}})
	list := ts.Ops()
	var all strings.Builder
	for _, tl := range list {
		b, _ := json.Marshal(tl.Declaration())
		all.Write(b)
	}
	for _, s := range secrets {
		if strings.Contains(all.String(), s) {
			t.Errorf("a declaration holds the secret %q", s)
		}
	}
	if s := (Credential{Token: "tok-SECRET"}).String(); strings.Contains(s, "SECRET") {
		t.Errorf("Credential.String() = %q", s)
	}
}

func TestLoadFromURL(t *testing.T) {
	files := http.FileServer(http.Dir("testdata/split"))
	var relative atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rel.yaml" {
			relative.Store(true)
			_, _ = io.WriteString(w, "openapi: 3.0.3\ninfo: {title: rel, version: '1'}\nservers: [{url: /api/v2}]\npaths:\n  /x:\n    get: {operationId: x, responses: {'200': {description: ok}}}\n")
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ts := load(t, Config{URL: srv.URL + "/main.yaml"})
	if diff := cmp.Diff([]string{"plant_tree", "find_nodes"}, names(t, ts)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	defs := schemaJSON(t, tools(t, ts)["plant_tree"])["$defs"].(map[string]any)
	if _, ok := defs["Leaf"]; !ok {
		t.Errorf("leaf.yaml was not fetched relative to schemas.yaml: %v", defs)
	}
	ts = load(t, Config{URL: srv.URL + "/rel.yaml"})
	if got := tools(t, ts)["x"].server.String(); got != srv.URL+"/api/v2" {
		t.Errorf("a relative server URL resolves against the document's: %q", got)
	}
	if _, err := Load(t.Context(), Config{URL: srv.URL + "/nope.yaml"}); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a missing document: err = %v", err)
	}
	if _, err := Load(t.Context(), Config{URL: srv.URL + "/main.yaml", MaxDocumentBytes: 100}); err == nil || !strings.Contains(err.Error(), "larger than the limit") {
		t.Errorf("a document over the limit: err = %v", err)
	}
}

func TestAuthNamesUndeclaredScheme(t *testing.T) {
	_, err := Load(t.Context(), Config{File: "testdata/petstore.yaml", Auth: map[string]Credential{"shop_key": {APIKey: "k"}}})
	if err == nil || !strings.Contains(err.Error(), `"shop_key", which the document does not declare; it declares shopKey`) {
		t.Errorf("err = %v", err)
	}
}
