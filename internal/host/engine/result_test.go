package engine

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/transport"
)

// memArtifacts is an artifact service in memory; fail refuses names.
type memArtifacts struct {
	mu      sync.Mutex
	enabled bool
	saved   map[string]*genai.Part
	fail    func(name string) error
}

func (a *memArtifacts) Enabled() bool { return a.enabled }
func (a *memArtifacts) Save(_ context.Context, name string, part *genai.Part) error {
	if a.fail != nil {
		if err := a.fail(name); err != nil {
			return err
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.saved == nil {
		a.saved = map[string]*genai.Part{}
	}
	a.saved[name] = part
	return nil
}

// filesSession is a session whose workspace holds files.
type filesSession struct {
	transport.Session
	files map[string]string
}

func (s filesSession) ReadFile(_ context.Context, path string) ([]byte, error) {
	data, ok := s.files[path]
	if !ok {
		return nil, errors.New("no such file")
	}
	return []byte(data), nil
}

// TestShapeSavesFiles: the files a block changed are saved as artifacts,
// each once, under their escaped names and with a MIME type from their
// extension; one that cannot be read or saved is named in stderr instead;
// without an artifact service nothing is saved.
func TestShapeSavesFiles(t *testing.T) {
	sess := filesSession{files: map[string]string{"report.csv": "a,b", "out/x.bin": "\x00", "bad.txt": "x"}}
	res := &transport.Result{Stdout: "done\n", Files: []transport.File{{Path: "report.csv"}, {Path: "out/x.bin"}, {Path: "report.csv"}, {Path: "gone.txt"}, {Path: "bad.txt"}}}
	art := &memArtifacts{enabled: true, fail: func(name string) error {
		if name == "bad.txt" {
			return errors.New("quota")
		}
		return nil
	}}
	out := Output{MaxChars: 1000}.Shape(t.Context(), art, "call-1", sess, res)
	files, _ := out["output_files"].([]string)
	if len(files) != 2 || files[0] != "report.csv" || files[1] != "out%2Fx.bin" {
		t.Errorf("output_files %v", files)
	}
	if p := art.saved["report.csv"]; p == nil || p.InlineData.MIMEType != "text/csv; charset=utf-8" || string(p.InlineData.Data) != "a,b" {
		t.Errorf("report.csv saved as %+v", p)
	}
	stderr, _ := out["stderr"].(string)
	if !strings.Contains(stderr, `["gone.txt" was not saved as an artifact: no such file]`) || !strings.Contains(stderr, `["bad.txt" was not saved as an artifact: quota]`) {
		t.Errorf("stderr %q, want a note for each file not saved", stderr)
	}
	if out["stdout"] != "done\n" {
		t.Errorf("stdout %q", out["stdout"])
	}

	none := &memArtifacts{}
	out = Output{MaxChars: 1000}.Shape(t.Context(), none, "call-1", sess, res)
	if files, _ := out["output_files"].([]string); len(files) != 0 || len(none.saved) != 0 || out["stderr"] != "" {
		t.Errorf("without an artifact service: %v, saved %v", out, none.saved)
	}
}

// TestShapeCutsStreams: a stream over the limit is cut for the model, with
// a note, and saved in full, which the note names with how to load it; a
// failed block says its exit code.
func TestShapeCutsStreams(t *testing.T) {
	long := strings.Repeat("line of output\n", 200)
	art := &memArtifacts{enabled: true}
	out := Output{MaxChars: 500, LoadArtifact: true}.Shape(t.Context(), art, "call-7", nil, &transport.Result{Stdout: long, ExitCode: 3, StderrDropped: 10})
	stdout, _ := out["stdout"].(string)
	if len(stdout) > 800 || !strings.Contains(stdout, "Output too long: 3,000 characters") || !strings.Contains(stdout, "load_artifact(filename='codemode-stdout-call-7.txt')") {
		t.Errorf("stdout (%d bytes): %.300q...", len(stdout), stdout)
	}
	if p := art.saved["codemode-stdout-call-7.txt"]; p == nil || string(p.InlineData.Data) != long {
		t.Error("the full stdout was not saved")
	}
	stderr, _ := out["stderr"].(string)
	if !strings.HasPrefix(stderr, "Process exited with code 3.") || !strings.Contains(stderr, "dropped 10 bytes from the middle of stderr") {
		t.Errorf("stderr %q", stderr)
	}
}

func TestNameStems(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{StreamArtifactName("stdout", "adk-1/2"), "codemode-stdout-adk-1_2.txt"},
		{StreamArtifactName("stderr", "///"), "codemode-stderr-call.txt"},
		{ToolResultArtifactName("My Report!", "t", "codemode-c-1"), "My_Report.json"},
		{ToolResultArtifactName("codemode-x", "t", "c"), "_codemode-x.json"},
		// Code's artifact_name cannot take a name in the reserved namespace,
		// such as the name generated for another call's result.
		{ToolResultArtifactName("codemode-tool-get_weather-call-1-1", "get_weather", "codemode-call-1-2"), "_codemode-tool-get_weather-call-1-1.json"},
		{ToolResultArtifactName("__codemode-x", "t", "c"), "_codemode-x.json"},
		{ToolResultArtifactName("codemode-stdout-x", "get_weather", "codemode-call-1-2"), "_codemode-stdout-x.json"},
		{ToolResultArtifactName("", "get weather", "codemode-c-2"), "codemode-tool-get_weather-c-2.json"},
		{ToolResultsArtifactName("codemode-c-1"), "codemode-tool-results-c-1.json"},
		{FileMIMEType("x.json"), "application/json"},
		{FileMIMEType("noext"), "application/octet-stream"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
