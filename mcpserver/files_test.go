package mcpserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestFilesComeBack: the files a block creates or changes come back in
// the execute result, small ones embedded (text as text, bytes as a
// blob), larger ones as resource links that the session, and no other,
// can read; a file is returned by the call that wrote it only.
func TestFilesComeBack(t *testing.T) {
	s := newTestServer(t, Config{})
	cs := connect(t, s)
	other := connect(t, s)
	ctx := t.Context()
	code := `import os
os.makedirs("out", exist_ok=True)
open("out/notes.txt", "w").write("héllo")
open("img.bin", "wb").write(bytes(range(256)))
open("big.txt", "w").write("x" * 100000)
print("wrote")`
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": code}})
	if err != nil {
		t.Fatal(err)
	}
	embedded := map[string]*mcp.ResourceContents{}
	links := map[string]*mcp.ResourceLink{}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.EmbeddedResource:
			embedded[c.Resource.URI] = c.Resource
		case *mcp.ResourceLink:
			links[c.Name] = c
		}
	}
	if res.IsError || len(embedded) != 2 || len(links) != 1 {
		t.Fatalf("want 2 embedded files and 1 link, got %d and %d in %+v", len(embedded), len(links), res.Content)
	}
	var notes, img *mcp.ResourceContents
	for uri, rc := range embedded {
		if !strings.HasPrefix(uri, "codemode://session/") {
			t.Errorf("embedded file URI %q: want the codemode scheme", uri)
		}
		switch {
		case strings.HasSuffix(uri, "notes.txt"):
			notes = rc
		case strings.HasSuffix(uri, "img.bin"):
			img = rc
		}
	}
	if notes == nil || notes.Text != "héllo" || !strings.HasPrefix(notes.MIMEType, "text/plain") {
		t.Errorf("out/notes.txt: want it embedded as text, got %+v", notes)
	}
	want := make([]byte, 256)
	for i := range want {
		want[i] = byte(i)
	}
	if img == nil || img.Text != "" || !bytes.Equal(img.Blob, want) {
		t.Errorf("img.bin: want its 256 bytes embedded as a blob, got %+v", img)
	}
	big := links["big.txt"]
	if big == nil || big.Size == nil || *big.Size != 100000 {
		t.Fatalf("big.txt: want a link with its size, got %+v", links)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: big.URI})
	if err != nil {
		t.Fatalf("resources/read of the session's own file: %v", err)
	}
	if len(read.Contents) != 1 || read.Contents[0].Text != strings.Repeat("x", 100000) {
		t.Errorf("resources/read: want big.txt's 100,000 characters, got %d contents", len(read.Contents))
	}
	// Another session knows the URI, but may not read it.
	callTool(t, ctx, other, ExecuteTool, map[string]any{"code": "pass"})
	if _, err := other.ReadResource(ctx, &mcp.ReadResourceParams{URI: big.URI}); err == nil {
		t.Errorf("another session read %s", big.URI)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: strings.Replace(big.URI, "big.txt", "nope.txt", 1)}); err == nil {
		t.Errorf("a file never written was read")
	}

	// The next call returns only what it writes.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "open('out/notes.txt', 'a').write('!')"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range res.Content {
		if e, ok := c.(*mcp.EmbeddedResource); ok {
			got = append(got, e.Resource.URI+"="+e.Resource.Text)
		}
		if _, ok := c.(*mcp.ResourceLink); ok {
			t.Errorf("the second call returned a link: %+v", c)
		}
	}
	if len(got) != 1 || !strings.HasSuffix(got[0], "notes.txt=héllo!") {
		t.Errorf("second call: want only the changed out/notes.txt, got %v", got)
	}
}

// TestCutStreamComesBack: a stream cut for the client comes back in full
// as a file of the result.
func TestCutStreamComesBack(t *testing.T) {
	cs := connect(t, newTestServer(t, Config{}))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: ExecuteTool, Arguments: map[string]any{"code": "print('y' * 200000)"}})
	if err != nil {
		t.Fatal(err)
	}
	var link *mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			link = l
		}
	}
	if link == nil || !strings.HasPrefix(link.Name, "codemode-stdout-") {
		t.Fatalf("want a link to the full stdout, got %+v", res.Content)
	}
	read, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: link.URI})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != strings.Repeat("y", 200000)+"\n" {
		t.Errorf("resources/read of the full stdout: %v", err)
	}
}
