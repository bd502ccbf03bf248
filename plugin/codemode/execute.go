package codemode

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/adk-codemode/codemode/internal/both/observe"
	eng "github.com/adk-codemode/codemode/internal/host/engine"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"google.golang.org/genai"

	"google.golang.org/adk/v2/agent"
	"google.golang.org/adk/v2/tool"

	"github.com/adk-codemode/codemode/transport"
)

// execTool is the execute_code tool.
type execTool struct {
	e    *engine
	decl *genai.FunctionDeclaration
}

var (
	_ tool.Tool    = (*execTool)(nil)
	_ runnableTool = (*execTool)(nil)
)

func (t *execTool) Name() string                            { return ToolName }
func (t *execTool) Description() string                     { return t.decl.Description }
func (t *execTool) IsLongRunning() bool                     { return false }
func (t *execTool) Declaration() *genai.FunctionDeclaration { return t.decl }

// msgBlocksPerTurn is the result of a call past Budgets.BlocksPerTurn.
const msgBlocksPerTurn = "The code did not run: this turn has made %d execute_code calls, the most Budgets.BlocksPerTurn allows. Answer with what you have found so far."

// Run runs the code in the invocation's sandbox, opening it on the first
// call of the turn. Calls of one invocation run one at a time. A block
// whose tool call asks for confirmation pauses there, and Run returns
// with the request on its actions (see approval.go); called again with
// the answer, Run resumes that block instead of running the code.
func (t *execTool) Run(ctx agent.Context, args any) (map[string]any, error) {
	e := t.e
	if conf := ctx.ToolConfirmation(); conf != nil {
		return e.resume(ctx, conf)
	}
	code, err := codeArg(args)
	if err != nil {
		return nil, err
	}
	if out, ok := e.announce(ctx); ok {
		return out, nil
	}
	if msg := e.tooLong(code); msg != "" {
		return result("", msg, nil), nil
	}
	tn, err := e.acquire(ctx.InvocationID())
	if err != nil {
		return nil, err
	}
	exec := &execCall{parent: ctx, id: ctx.FunctionCallID()}
	tn.begin(exec)
	defer tn.end(exec)
	// First on every way out (tool calls may have saved artifacts before
	// a lost connection): no save is accepted once the delta is taken, so
	// the hook sees what the event records.
	defer e.reportArtifacts(ctx, exec)
	// The block's tool results are saved before they are reported.
	defer exec.flushResults(ctx)
	// The surface is resolved on the turn the call runs on: a turn looked
	// up again could be another one, created after this one was released.
	if _, err := e.surfaceOf(ctx, tn, withArtifacts(ctx)); err != nil {
		return nil, err
	}
	if tn.awaitingApproval() {
		return e.withNotices(ctx, result("", msgBusy, nil)), nil
	}
	if limit := e.cfg.Budgets.blocksPerTurn(); limit > 0 && !tn.countBlock(limit) {
		return e.withNotices(ctx, result("", fmt.Sprintf(msgBlocksPerTurn, limit), nil)), nil
	}
	f := e.launch(ctx, tn, code, observe.Identity{
		Invocation: ctx.InvocationID(), Session: ctx.SessionID(), Agent: ctx.AgentName(), CallID: ctx.FunctionCallID(),
	})
	return e.settle(ctx, tn, exec, f, false)
}

// finish shapes the outcome of a block that ended.
func (e *engine) finish(ctx agent.Context, exec *execCall, res *transport.Result, sess transport.Session, err error) (map[string]any, error) {
	var lost *eng.LostError
	if errors.As(err, &lost) {
		return result("", lost.Msg, nil), nil
	}
	if err != nil {
		return nil, err
	}
	return e.output(ctx, exec, sess, res), nil
}

// codeArg is execute_code's code argument.
func codeArg(args any) (string, error) {
	m, _ := args.(map[string]any)
	code, ok := m["code"].(string)
	if !ok {
		return "", fmt.Errorf("execute_code: the code argument must be a string, got %T", m["code"])
	}
	return code, nil
}

// tooLong is the model's message for code over MaxCodeChars, or "".
func (e *engine) tooLong(code string) string {
	limit := e.cfg.MaxCodeChars
	if limit <= 0 || len(code) <= limit {
		return ""
	}
	if n := utf8.RuneCountInString(code); n > limit {
		return fmt.Sprintf("Code exceeds maximum allowed length (%s > %s chars).", eng.Thousands(n), eng.Thousands(limit))
	}
	return ""
}

// reportArtifacts ends exec's saves and passes what it saved to
// OnArtifactsSaved.
func (e *engine) reportArtifacts(ctx agent.Context, exec *execCall) {
	if delta := exec.end(); len(delta) > 0 && e.cfg.OnArtifactsSaved != nil {
		e.cfg.OnArtifactsSaved(ctx, delta)
	}
}

// turnSandbox is the sandbox of the turn tn, as the engine runs blocks in
// it.
type turnSandbox struct {
	e  *engine
	tn *turn
}

func (s turnSandbox) Session(ctx context.Context) (transport.Session, bool, error) {
	return s.e.session(ctx, s.tn)
}

func (s turnSandbox) Discard(sess transport.Session) { s.tn.discard(sess) }

func (s turnSandbox) Closed() bool { return s.e.isClosed() }

func (e *engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// maxOutputFiles bounds the workspace files saved as artifacts after one
// block; the rest are named in stderr.
const maxOutputFiles = 1000

// output shapes a block's result for the model. With an artifact service,
// the files the block created or changed are saved as artifacts and listed
// in output_files, and a stream cut for the model is saved in full.
func (e *engine) output(ctx agent.Context, exec *execCall, sess transport.Session, res *transport.Result) map[string]any {
	stderr := res.Stderr
	if res.ExitCode != 0 {
		if s := strings.TrimRight(stderr, " \t\r\n"); s != "" {
			stderr = s + "\n"
		} else {
			stderr = ""
		}
		stderr += fmt.Sprintf("Process exited with code %d.", res.ExitCode)
	}
	files, notes := e.saveFiles(ctx, exec, sess, res.Files)
	// The notes name paths the sandbox chose: they are bounded and
	// neutralised with the rest of stderr.
	if len(notes) > 0 {
		if stderr != "" && !strings.HasSuffix(stderr, "\n") {
			stderr += "\n"
		}
		stderr += strings.Join(notes, "\n")
	}
	stdout := e.stream(ctx, exec, "stdout", res.Stdout, res.StdoutDropped)
	stderr = e.stream(ctx, exec, "stderr", stderr, res.StderrDropped)
	// On ADK's span of the execute_code call: what reached the model.
	trace.SpanFromContext(ctx).SetAttributes(
		attribute.Int("codemode.files.saved", len(files)),
		attribute.Int("codemode.stdout.chars", utf8.RuneCountInString(stdout)),
		attribute.Int("codemode.stderr.chars", utf8.RuneCountInString(stderr)))
	return result(stdout, stderr, files)
}

// outputFilesTimeout bounds reading a block's changed files from the
// sandbox, all of them together; a variable for tests.
var outputFilesTimeout = 2 * time.Minute

// maxNotePath bounds a path quoted in a note.
const maxNotePath = 256

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
// from the sandbox takes at most outputFilesTimeout.
func (e *engine) saveFiles(ctx agent.Context, exec *execCall, sess transport.Session, files []transport.File) (names, notes []string) {
	if len(files) == 0 || sess == nil || !exec.hasArtifacts() {
		return nil, nil
	}
	rctx, cancel := context.WithTimeout(ctx, outputFilesTimeout)
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
				notePath(f.Path), len(files)-i-1, outputFilesTimeout))
			break
		}
		saved++
		data, err := sess.ReadFile(rctx, f.Path)
		if err != nil {
			if rctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("reading the changed files from the sandbox took longer than %s", outputFilesTimeout)
			}
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		name := WorkspaceArtifactName(f.Path)
		if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: fileMIMEType(f.Path), Data: data}}); err != nil {
			notes = append(notes, fmt.Sprintf("[%s was not saved as an artifact: %v]", notePath(f.Path), err))
			continue
		}
		names = append(names, name)
	}
	return names, notes
}

// fileMIMEType guesses a workspace file's MIME type from its extension,
// else application/octet-stream. The tool-result types are never given.
func fileMIMEType(p string) string {
	t := mime.TypeByExtension(path.Ext(p))
	if t == "" || isToolResultMIME(t) {
		return "application/octet-stream"
	}
	return t
}

// stream returns one output stream as the model sees it: bounded and
// neutralised, with a note when something was left out. The full text of a
// cut stream is saved as the artifact codemode-<stream>-<call>.txt, and the
// note tells how to load it.
func (e *engine) stream(ctx agent.Context, exec *execCall, kind, text string, dropped int64) string {
	view, cut := eng.BoundOutput(text, e.cfg.MaxOutputChars)
	if !cut && dropped == 0 {
		return view
	}
	if cut {
		e.obs.Truncated(ctx, kind, "model")
	}
	var note strings.Builder
	note.WriteString("\n[")
	if cut {
		fmt.Fprintf(&note, "Output too long: %s characters, more than the limit of %s; only the start and the end are shown.",
			eng.Thousands(utf8.RuneCountInString(text)), eng.Thousands(e.cfg.MaxOutputChars))
	}
	if dropped > 0 {
		if cut {
			note.WriteByte(' ')
		}
		fmt.Fprintf(&note, "The sandbox dropped %s bytes from the middle of %s before it reached the host.", eng.Thousands(int(dropped)), kind)
	}
	if cut && exec.hasArtifacts() {
		name := streamArtifactName(kind, exec.id)
		if _, err := exec.save(ctx, name, &genai.Part{InlineData: &genai.Blob{MIMEType: "text/plain", Data: []byte(text)}}); err == nil {
			fmt.Fprintf(&note, " The full %s was saved as the artifact %s", kind, name)
			if !e.cfg.DisableArtifactTools {
				fmt.Fprintf(&note, "; load it with load_artifact(filename='%s')", name)
			}
			note.WriteByte('.')
		}
	}
	note.WriteByte(']')
	return view + note.String()
}

func result(stdout, stderr string, files []string) map[string]any {
	if files == nil {
		files = []string{}
	}
	return map[string]any{"stdout": stdout, "stderr": stderr, "output_files": files}
}
