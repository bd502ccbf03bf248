package mcpserver

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"google.golang.org/adk/v2/artifact"
)

// Bounds on the files a block's result carries.
const (
	// maxEmbeddedFile is the size up to which a file comes back embedded
	// in the execute result; a larger one comes back as a resource link.
	maxEmbeddedFile = 64 << 10
	// maxEmbeddedTotal bounds the embedded files of one result together;
	// past it, the rest are links.
	maxEmbeddedTotal = 256 << 10
	// maxKeptBytes bounds the files a client session keeps for its
	// links, all together; the oldest go first, and a file larger than
	// this is not kept.
	maxKeptBytes = 64 << 20
	// maxKeptFiles bounds how many files a client session keeps.
	maxKeptFiles = 1000
)

// fileScheme is the URI scheme of the files of a session: a file is
// fileScheme://session/TOKEN/files/NAME, TOKEN the session's secret and
// NAME the file's artifact name, escaped as a path segment.
const fileScheme = "codemode"

// fileTemplate is the URI template of resources/read for files.
const fileTemplate = fileScheme + "://session/{session}/files/{name}"

// keptFile is a file a link of the session points at.
type keptFile struct {
	name string
	mime string
	data []byte
}

// files keeps the files a client session's results linked to, its latest
// version of each, within maxKeptBytes and maxKeptFiles. It has a lock of
// its own: a file is read while the session runs code.
type files struct {
	mu     sync.Mutex
	byName map[string]*keptFile
	order  []string // oldest first
	bytes  int
}

func (f *files) keep(k *keptFile) bool {
	if len(k.data) > maxKeptBytes {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.drop(k.name)
	for len(f.order) > 0 && (f.bytes+len(k.data) > maxKeptBytes || len(f.order) >= maxKeptFiles) {
		f.drop(f.order[0])
	}
	if f.byName == nil {
		f.byName = map[string]*keptFile{}
	}
	f.byName[k.name] = k
	f.order = append(f.order, k.name)
	f.bytes += len(k.data)
	return true
}

func (f *files) get(name string) *keptFile {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byName[name]
}

// drop forgets the file name. Called with mu held.
func (f *files) drop(name string) {
	k, ok := f.byName[name]
	if !ok {
		return
	}
	delete(f.byName, name)
	f.bytes -= len(k.data)
	for i, n := range f.order {
		if n == name {
			f.order = append(f.order[:i], f.order[i+1:]...)
			break
		}
	}
}

// fileURI is the URI of the file name of the session whose secret is
// token.
func fileURI(token, name string) string {
	return fileScheme + "://session/" + token + "/files/" + url.PathEscape(name)
}

// displayPath is the workspace path an artifact name stands for
// (codemode.WorkspaceArtifactName percent-encodes it), for people.
func displayPath(name string) string {
	if p, err := url.PathUnescape(name); err == nil && utf8.ValidString(p) {
		return p
	}
	return name
}

// collectFiles returns, as MCP content, the files the plugin saved as
// artifacts in the ADK session sid since the last call (the files the
// block created or changed, and the full text of a stream cut for the
// client), and removes them from the artifact service: small files
// embedded, larger ones as resource links that the session keeps. A file
// that cannot be read or kept is named in a note. Called with mu held.
func (s *client) collectFiles(ctx context.Context, sid string) (content []mcp.Content, notes []string) {
	names, err := s.listArtifacts(ctx, sid)
	if err != nil {
		return nil, []string{"Note: the files this block wrote could not be listed: " + err.Error()}
	}
	embedded := 0
	for _, name := range names {
		part, err := s.artifacts.Load(ctx, &artifact.LoadRequest{AppName: appName, UserID: userID, SessionID: sid, FileName: name})
		_ = s.artifacts.Delete(ctx, &artifact.DeleteRequest{AppName: appName, UserID: userID, SessionID: sid, FileName: name})
		if err != nil || part.Part == nil || part.Part.InlineData == nil {
			notes = append(notes, fmt.Sprintf("Note: the file %q could not be read back: %v", displayPath(name), err))
			continue
		}
		blob := part.Part.InlineData
		mime := blob.MIMEType
		if mime == "" {
			mime = "application/octet-stream"
		}
		uri := fileURI(s.token, name)
		if len(blob.Data) <= maxEmbeddedFile && embedded+len(blob.Data) <= maxEmbeddedTotal {
			embedded += len(blob.Data)
			rc := &mcp.ResourceContents{URI: uri, MIMEType: mime}
			if isText(mime, blob.Data) {
				rc.Text = string(blob.Data)
			} else {
				rc.Blob = blob.Data
			}
			content = append(content, &mcp.EmbeddedResource{Resource: rc})
			continue
		}
		if !s.files.keep(&keptFile{name: name, mime: mime, data: blob.Data}) {
			notes = append(notes, fmt.Sprintf("Note: the file %q (%d bytes) is too large to return; the server keeps files of up to %d bytes.", displayPath(name), len(blob.Data), maxKeptBytes))
			continue
		}
		size := int64(len(blob.Data))
		content = append(content, &mcp.ResourceLink{URI: uri, Name: displayPath(name), MIMEType: mime, Size: &size})
	}
	return content, notes
}

// purgeFiles removes what the plugin saved in the ADK session sid and no
// result collected (the files of a block whose result was dropped).
func (s *client) purgeFiles(sid string) {
	ctx := context.Background()
	names, _ := s.listArtifacts(ctx, sid)
	for _, name := range names {
		_ = s.artifacts.Delete(ctx, &artifact.DeleteRequest{AppName: appName, UserID: userID, SessionID: sid, FileName: name})
	}
}

func (s *client) listArtifacts(ctx context.Context, sid string) ([]string, error) {
	resp, err := s.artifacts.List(ctx, &artifact.ListRequest{AppName: appName, UserID: userID, SessionID: sid})
	if err != nil {
		return nil, err
	}
	return resp.FileNames, nil
}

// isText says data of the MIME type mime can go as text.
func isText(mime string, data []byte) bool {
	text := strings.HasPrefix(mime, "text/") || strings.HasSuffix(mime, "+json") || strings.HasSuffix(mime, "+xml") ||
		mime == "application/json" || mime == "application/xml" || mime == "application/javascript"
	return text && utf8.Valid(data)
}

// readFile serves resources/read for the files of the client session that
// asks: a URI of another session, or of a file it no longer keeps, is not
// found.
func (s *Server) readFile(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, fileScheme+"://session/")
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	token, escaped, ok := strings.Cut(rest, "/files/")
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	name, err := url.PathUnescape(escaped)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	s.mu.Lock()
	c := s.byMCP[req.Session]
	s.mu.Unlock()
	if c == nil || subtle.ConstantTimeCompare([]byte(c.token), []byte(token)) != 1 {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	k := c.files.get(name)
	if k == nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	rc := &mcp.ResourceContents{URI: uri, MIMEType: k.mime}
	if isText(k.mime, k.data) {
		rc.Text = string(k.data)
	} else {
		rc.Blob = k.data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{rc}}, nil
}
