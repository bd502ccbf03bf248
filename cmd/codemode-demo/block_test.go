package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"iter"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"

	"google.golang.org/adk/v2/model"

	"github.com/adk-codemode/codemode/backend/jail"
	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
	"github.com/adk-codemode/codemode/transport"
)

var update = flag.Bool("update", false, "rewrite testdata/block.txtar")

// recordingModel is the demo's scripted model, keeping every request.
type recordingModel struct {
	scriptedModel
	mu   sync.Mutex
	reqs []*model.LLMRequest
}

func (m *recordingModel) GenerateContent(ctx context.Context, req *model.LLMRequest, stream bool) iter.Seq2[*model.LLMResponse, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.scriptedModel.GenerateContent(ctx, req, stream)
}

// hostLines are the elements of the block that depend on the machine.
var hostLines = regexp.MustCompile(`(?s)\n  <python-version>[^\n]*</python-version>|\n  <installed-packages>.*?</installed-packages>`)

// TestGoldenBlock keeps what the demo agent's model reads, the <code-mode>
// block of its first request on the jail, as a golden (without the
// interpreter's version and packages, which depend on the machine), so
// that every change to it is reviewed as a diff.
func TestGoldenBlock(t *testing.T) {
	requireJail(t)
	m := &recordingModel{}
	b := &jail.Backend{}
	t.Cleanup(func() { _ = b.Close() })
	if err := converse(t.Context(), io.Discard, m, b, task); err != nil {
		t.Fatal(err)
	}
	var instruction string
	for _, p := range m.reqs[0].Config.SystemInstruction.Parts {
		instruction += p.Text
	}
	i := strings.Index(instruction, "<code-mode>")
	if i < 0 {
		t.Fatalf("no <code-mode> block in the instruction:\n%s", instruction)
	}
	block := hostLines.ReplaceAllString(instruction[i:], "")
	t.Logf("the demo's block is %d characters without the machine's Python version and packages", len([]rune(block)))
	got := txtar.Format(&txtar.Archive{Files: []txtar.File{
		{Name: "reason", Data: []byte("The demo agent (two Go tools, the jail, no artifact service): what its model reads.\n")},
		{Name: "block", Data: []byte(block + "\n")},
	}})
	path := filepath.Join("testdata", "block.txtar")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got); run with -update if the change is meant:\n%s", path, diff)
	}
}

// requireJail skips, saying how to enable it, where the jail cannot run.
func requireJail(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := (&jail.Backend{}).Open(ctx, transport.SessionConfig{})
	if errors.Is(err, jail.ErrUnsupported) {
		hostcap.Missing(t, hostcap.UserNS, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}
