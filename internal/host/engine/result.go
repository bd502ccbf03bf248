package engine

import (
	"context"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/genai"

	"github.com/adk-codemode/codemode/internal/both/observe"
	"github.com/adk-codemode/codemode/transport"
)

// Result is execute_code's result as the model gets it: the block's
// standard output and error, and the artifacts its changed files were
// saved as.
func Result(stdout, stderr string, files []string) map[string]any {
	if files == nil {
		files = []string{}
	}
	return map[string]any{"stdout": stdout, "stderr": stderr, "output_files": files}
}

// Artifacts is where a block's changed files and cut streams are saved:
// the artifact service of the execute_code call, through the adapter.
type Artifacts interface {
	// Enabled says whether there is an artifact service.
	Enabled() bool
	// Save saves part as the artifact name.
	Save(ctx context.Context, name string, part *genai.Part) error
}

// Output shapes a block's result for the model.
type Output struct {
	MaxChars     int  // Config.MaxOutputChars
	LoadArtifact bool // the model has load_artifact, which a note may name
	Observer     *observe.Observer
}

// maxOutputFiles bounds the workspace files saved as artifacts after one
// block; the rest are named in stderr.
const maxOutputFiles = 1000

// OutputFilesTimeout bounds reading a block's changed files from the
// sandbox, all of them together; a variable for tests.
var OutputFilesTimeout = 2 * time.Minute

// maxNotePath bounds a path quoted in a note.
const maxNotePath = 256

// Shape returns res, the result of the block of the execute_code call
// callID that ran in sess, as the model gets it. With artifacts, the files
// the block created or changed are saved as artifacts and listed in
// output_files, and a stream cut for the model is saved in full.
func (o Output) Shape(ctx context.Context, art Artifacts, callID string, sess transport.Session, res *transport.Result) map[string]any {
	stderr := res.Stderr
	if res.ExitCode != 0 {
		if s := strings.TrimRight(stderr, " \t\r\n"); s != "" {
			stderr = s + "\n"
		} else {
			stderr = ""
		}
		stderr += fmt.Sprintf("Process exited with code %d.", res.ExitCode)
	}
	files, notes := saveFiles(ctx, art, sess, res.Files)
	// The notes name paths the sandbox chose: they are bounded and
	// neutralised with the rest of stderr.
	if len(notes) > 0 {
		if stderr != "" && !strings.HasSuffix(stderr, "\n") {
			stderr += "\n"
		}
		stderr += strings.Join(notes, "\n")
	}
	stdout := o.stream(ctx, art, callID, "stdout", res.Stdout, res.StdoutDropped)
	stderr = o.stream(ctx, art, callID, "stderr", stderr, res.StderrDropped)
	// On the span of the execute_code call: what reached the model.
	trace.SpanFromContext(ctx).SetAttributes(
		attribute.Int("codemode.files.saved", len(files)),
		attribute.Int("codemode.stdout.chars", utf8.RuneCountInString(stdout)),
		attribute.Int("codemode.stderr.chars", utf8.RuneCountInString(stderr)))
	return Result(stdout, stderr, files)
}

// notePath quotes a path the sandbox sent, on one line and bounded.
func notePath(p string) string {
	if utf8.RuneCountInString(p) > maxNotePath {
		p = string([]rune(p)[:maxNotePath]) + "..."
	}
	return strconv.Quote(p)
}

// saveFiles saves the workspace files a block created or changed as
// artifacts, by [WorkspaceArtifactName], and returns their names and a note
// for each file that could not be saved. Without an artifact service it
// saves nothing. A path listed twice is saved once, and reading the files
// from the sandbox takes at most OutputFilesTimeout.
func saveFiles(ctx context.Context, art Artifacts, sess transport.Session, files []transport.File) (names, notes []string) {
	if len(files) == 0 || sess == nil || !art.Enabled() {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, OutputFilesTimeout)
	defer cancel()
	seen := map[string]bool{}
	saved := 0
	for i, f := range files {
		if seen[f.Path] {
			continue
		}
		seen[f.Path] = true
		if saved == maxOutputFiles {
			notes = append(notes, fmt.Sprintf("[%d more changed files were not saved as artifacts: at most %d are saved per call.]", len(files)-i, maxOutputFiles))
			break
		}
		if rctx.Err() != nil {
			notes = append(notes, fmt.Sprintf("[%s and %d more changed files were not saved as artifacts: reading them from the sandbox took longer than %s.]",
				notePath(f.Path), len(files)-i-1, OutputFilesTimeout))
			break
		}
		saved++
		data, err := sess.ReadFile(rctx, f.Path)
		if err != nil {
			if rctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("reading the changed files from the sandbox took longer than %s", OutputFilesTimeout)
			}
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		name := WorkspaceArtifactName(f.Path)
		if err := art.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: FileMIMEType(f.Path), Data: data}}); err != nil {
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		names = append(names, name)
	}
	return names, notes
}

// FileMIMEType guesses a workspace file's MIME type from its extension,
// else application/octet-stream. The tool-result types are never given.
func FileMIMEType(p string) string {
	t := mime.TypeByExtension(path.Ext(p))
	if t == "" || IsToolResultMIME(t) {
		return "application/octet-stream"
	}
	return t
}

// stream returns one output stream as the model sees it: bounded and
// neutralised, with a note when something was left out. The full text of a
// cut stream is saved as the artifact codemode-<stream>-<call>.txt, and the
// note tells how to load it.
func (o Output) stream(ctx context.Context, art Artifacts, callID, kind, text string, dropped int64) string {
	view, cut := BoundOutput(text, o.MaxChars)
	if !cut && dropped == 0 {
		return view
	}
	if cut {
		o.Observer.Truncated(ctx, kind, "model")
	}
	var note strings.Builder
	note.WriteString("\n[")
	if cut {
		fmt.Fprintf(&note, "Output too long: %s characters, more than the limit of %s; only the start and the end are shown.",
			Thousands(utf8.RuneCountInString(text)), Thousands(o.MaxChars))
	}
	if dropped > 0 {
		if cut {
			note.WriteByte(' ')
		}
		fmt.Fprintf(&note, "The sandbox dropped %s bytes from the middle of %s before it reached the host.", Thousands(int(dropped)), kind)
	}
	if cut && art.Enabled() {
		name := StreamArtifactName(kind, callID)
		if err := art.Save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte(text)}}); err == nil {
			fmt.Fprintf(&note, " The full %s was saved as the artifact %s", kind, name)
			if o.LoadArtifact {
				fmt.Fprintf(&note, "; load it with load_artifact(filename='%s')", name)
			}
			note.WriteByte('.')
		}
	}
	note.WriteByte(']')
	return view + note.String()
}
