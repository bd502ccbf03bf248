package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/template"
	"time"

	"golang.org/x/mod/module"

	"github.com/adk-codemode/codemode/internal/testsupport/hostcap"
)

// testVersion makes up a version for a test release, new on every run, so
// that no module cache can hold an older build under it.
func testVersion(t *testing.T) string {
	t.Helper()
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "v0.0.1-releasetest-" + hex.EncodeToString(b)
}

// released returns a copy of this repository with the release at version
// prepared and committed, and that commit, which the tags would name.
func released(t *testing.T, version string) (repo, commit string) {
	t.Helper()
	repo = copyOfThisRepository(t)
	p, err := prepare(repo, version)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	p.print(&out)
	t.Log(out.String())
	commitAll(t, repo, "release "+version)
	return repo, gitIn(t, repo, "rev-parse", "HEAD")
}

// copyOfThisRepository copies the files of this repository that git tracks
// or would track, as they are in the work tree, into a new repository, and
// commits them: the tree to release in a test, never this one.
func copyOfThisRepository(t *testing.T) string {
	t.Helper()
	needCommand(t, "git")
	src := gitIn(t, ".", "rev-parse", "--show-toplevel")
	dst := t.TempDir()
	list := gitIn(t, src, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	for _, name := range strings.Split(list, "\x00") {
		if name != "" {
			copyFile(t, filepath.Join(src, name), filepath.Join(dst, name))
		}
	}
	commitAll(t, dst, "the tree")
	return dst
}

// copyFile copies a file or symbolic link; a file deleted from the work
// tree is skipped.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	info, err := os.Lstat(from)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := os.Readlink(from)
		if err == nil {
			err = os.Symlink(target, to)
		}
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}

// modulePath returns the path of the module in dir of repo.
func modulePath(t *testing.T, repo, dir string) string {
	t.Helper()
	f, err := readGoMod(repo, dir)
	if err != nil {
		t.Fatal(err)
	}
	return f.Module.Mod.Path
}

// requiredVersion returns the version at which the module in dir of repo
// requires modPath.
func requiredVersion(t *testing.T, repo, dir, modPath string) string {
	t.Helper()
	f, err := readGoMod(repo, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path == modPath {
			return r.Mod.Version
		}
	}
	t.Fatalf("the module in %s does not require %s", dir, modPath)
	return ""
}

// goCmd runs the go command in dir with env added to the test's own, and
// returns what it printed.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return string(out)
}

// goEnv returns the go command's setting of name.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	return strings.TrimSpace(goCmd(t, ".", nil, "env", name))
}

// TestReleaseSumsMatchGoCommand checks the go.sum lines the release writes
// against the go command's own: it tags the release in a copy of this
// repository and has the go command fetch both modules from the tags, as
// the module proxy does from GitHub, with git pointed at the copy.
func TestReleaseSumsMatchGoCommand(t *testing.T) {
	needCommand(t, "go")
	version := testVersion(t)
	repo, commit := released(t, version)
	gitIn(t, repo, "tag", version)
	gitIn(t, repo, "tag", "adkv1/"+version)
	rootPath, v1Path := modulePath(t, repo, "."), modulePath(t, repo, "adkv1")

	gitConfig := filepath.Join(t.TempDir(), "gitconfig")
	writeFiles(t, filepath.Dir(gitConfig), map[string]string{"gitconfig": fmt.Sprintf(
		"[url \"file://%s\"]\n\tinsteadOf = https://%s\n[protocol \"file\"]\n\tallow = always\n", repo, rootPath)})
	env := []string{
		"GIT_CONFIG_GLOBAL=" + gitConfig, "GIT_CONFIG_NOSYSTEM=1",
		"GOMODCACHE=" + t.TempDir(), "GOFLAGS=-modcacherw", "GOWORK=off", "GOTOOLCHAIN=local",
		"GOPROXY=direct", "GONOPROXY=none", "GONOSUMDB=" + rootPath, "GOVCS=" + rootPath + ":git",
	}
	fetched := downloadSums(t, goCmd(t, t.TempDir(), env, "mod", "download", "-json", rootPath+"@"+version, v1Path+"@"+version))

	v1Sum := readFile(t, filepath.Join(repo, "adkv1", "go.sum"))
	for _, line := range sumLines(rootPath, version, fetched[rootPath]) {
		if !strings.Contains(v1Sum, line+"\n") {
			t.Errorf("adkv1/go.sum lacks %q, the go command's hash from the tag", line)
		}
	}
	// What the test proxy serves is what the go command makes.
	for _, dir := range []string{".", "adkv1"} {
		m := modulePath(t, repo, dir)
		ours, err := hashModule(repo, commit, goModule{dir: dir, path: m}, version)
		if err != nil {
			t.Fatal(err)
		}
		if ours != fetched[m] {
			t.Errorf("hashes of %s made here = %+v, by the go command from the tag = %+v", m, ours, fetched[m])
		}
	}
}

// downloadSums decodes the output of go mod download -json into the hashes
// of each module.
func downloadSums(t *testing.T, out string) map[string]sums {
	t.Helper()
	got := map[string]sums{}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var m struct{ Path, Sum, GoModSum, Error string }
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return got
		}
		if err != nil {
			t.Fatalf("go mod download -json: %v\n%s", err, out)
		}
		if m.Error != "" || m.Sum == "" {
			t.Fatalf("go mod download %s: %q\n%s", m.Path, m.Error, out)
		}
		got[m.Path] = sums{zip: m.Sum, goMod: m.GoModSum}
	}
}

// TestReleaseInstallable publishes both modules, released at a made-up
// version from a copy of this repository, into a module proxy on disk, and
// installs each into a new program outside the repository, as a user
// would: with the go command's own proxy for everything else, no
// workspace and no replace. Each program builds an agent with Code Mode
// registered on a runner, and says which modules it was built from.
func TestReleaseInstallable(t *testing.T) {
	needCommand(t, "go")
	if testing.Short() {
		t.Skip("builds two ADK Go programs from a module proxy; not with -short")
	}
	upstream := goEnv(t, "GOPROXY")
	src := gitIn(t, ".", "rev-parse", "--show-toplevel")
	v2 := program{name: "v2", module: modulePath(t, src, "."), adk: "google.golang.org/adk/v2", toolContext: "agent.Context"}
	v2.plugin = v2.module + "/plugin/codemode"
	v2.adkVersion = requiredVersion(t, src, ".", v2.adk)
	needProxy(t, upstream, v2.adk+"@"+v2.adkVersion)

	version := testVersion(t)
	repo, commit := released(t, version)
	v1 := program{name: "v1", module: modulePath(t, repo, "adkv1"), adk: "google.golang.org/adk", toolContext: "agent.ToolContext"}
	v1.plugin = v1.module + "/plugin/codemode"
	v1.adkVersion = requiredVersion(t, repo, "adkv1", v1.adk)
	proxyDir := t.TempDir()
	publish(t, proxyDir, repo, commit, ".", version)
	publish(t, proxyDir, repo, commit, "adkv1", version)
	forgetModules(t, version, v2.module, v1.module)

	env := []string{
		"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local",
		"GOPROXY=file://" + proxyDir + "," + upstream,
		// The made-up version is in no checksum database; every other
		// module's hashes are still checked against it.
		"GONOSUMDB=" + v2.module,
	}
	t.Run("adkv1 alone", func(t *testing.T) {
		// Without the workspace, adkv1 builds against the published root
		// module only if its go.sum holds the hashes the proxy serves.
		goCmd(t, filepath.Join(repo, "adkv1"), slices.Concat(env, []string{"GOFLAGS=-mod=readonly -buildvcs=false"}), "list", "-deps", "./...")
	})
	for _, p := range []program{v2, v1} {
		t.Run(p.name, func(t *testing.T) {
			out := installAndRun(t, env, p, version)
			t.Log(strings.SplitN(out, "\n", 2)[0])
			for _, want := range p.wants(v2.module, version) {
				if !strings.Contains(out, want+"\n") {
					t.Errorf("the program's output lacks %q:\n%s", want, out)
				}
			}
			if strings.Contains(out, "=>") {
				t.Errorf("the program was built with a module replaced:\n%s", out)
			}
		})
	}
}

// needProxy skips the test unless the go command can reach the module
// proxy, asked with a module cache of its own so that nothing cached
// answers instead.
func needProxy(t *testing.T, upstream, query string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "-json", query)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOMODCACHE="+t.TempDir(), "GOFLAGS=-modcacherw", "GOPROXY="+upstream, "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		hostcap.Missing(t, hostcap.ModuleProxy, fmt.Sprintf("the test fetches ADK Go and its requirements through it, and the go command cannot reach GOPROXY=%s: %v\n%s", upstream, err, bytes.TrimSpace(out)))
	}
}

// forgetModules removes the made-up version of the modules from the shared
// module cache when the test ends, so that runs leave nothing there.
func forgetModules(t *testing.T, version string, paths ...string) {
	t.Helper()
	if !strings.Contains(version, "-releasetest-") {
		t.Fatalf("refusing to remove %s from the module cache: not a made-up version", version)
	}
	modCache := goEnv(t, "GOMODCACHE")
	t.Cleanup(func() {
		for _, p := range paths {
			escaped, err := module.EscapePath(p)
			if err != nil {
				t.Error(err)
				continue
			}
			at := filepath.Join(modCache, filepath.FromSlash(escaped))
			removeAll(t, at+"@"+escapedVersion(t, version))
			downloads := filepath.Join(modCache, "cache", "download", filepath.FromSlash(escaped), "@v")
			files, _ := filepath.Glob(filepath.Join(downloads, escapedVersion(t, version)+".*"))
			for _, f := range files {
				removeAll(t, f)
			}
			dropFromList(t, filepath.Join(downloads, "list"), version)
			removeEmptyDirs(downloads, modCache)
			removeEmptyDirs(filepath.Dir(at), modCache)
		}
	})
}

// removeEmptyDirs removes dir and its parents below stop while they are
// empty.
func removeEmptyDirs(dir, stop string) {
	for ; strings.HasPrefix(dir, stop+string(filepath.Separator)); dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			return
		}
	}
}

// dropFromList removes version from a module's list of versions in the
// module cache, and the list if that leaves it empty.
func dropFromList(t *testing.T, list, version string) {
	t.Helper()
	data, err := os.ReadFile(list)
	if err != nil {
		return
	}
	var keep []string
	for _, v := range strings.Fields(string(data)) {
		if v != version {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		removeAll(t, list)
		return
	}
	if err := os.WriteFile(list, []byte(strings.Join(keep, "\n")+"\n"), 0o644); err != nil {
		t.Errorf("cleaning the module cache: %v", err)
	}
}

// removeAll removes a tree of the module cache, whose directories the go
// command makes read-only.
func removeAll(t *testing.T, root string) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	if err := os.RemoveAll(root); err != nil {
		t.Errorf("cleaning the module cache: %v", err)
	}
}

// program is a small agent program on one line of ADK Go.
type program struct {
	name        string
	module      string // the module to go get
	plugin      string // the import path of Code Mode's plugin
	adk         string // ADK Go's module path, which is also its import path prefix
	adkVersion  string // the version of ADK Go the module requires
	toolContext string // the context a function tool is given
}

// wants are the lines the program must print, built from codemode at
// version.
func (p program) wants(codemode, version string) []string {
	w := []string{
		"runner ready: agent weather_agent with plugin codemode",
		"dep " + codemode + " " + version,
		"dep " + p.adk + " " + p.adkVersion,
	}
	if p.module != codemode {
		w = append(w, "dep "+p.module+" "+version)
	}
	return w
}

// installAndRun makes a new module in a temporary directory, gets p's
// module at version into it, builds the program and returns its output.
func installAndRun(t *testing.T, env []string, p program, version string) string {
	t.Helper()
	dir := t.TempDir()
	goCmd(t, dir, env, "mod", "init", "example.com/installcheck")
	f, err := os.Create(filepath.Join(dir, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	fields := map[string]string{"ADK": p.adk, "Plugin": p.plugin, "ToolContext": p.toolContext}
	if err := agentProgram.Execute(f, fields); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if goEnv(t, "GONOPROXY") != "" {
		// With GONOPROXY (or GOPRIVATE) set, go get of a nested module is
		// answered from the outer module in the module cache, and fails
		// (golang/go#58116); downloading the module first is the way round.
		t.Log("GONOPROXY is set: downloading the module before go get")
		goCmd(t, dir, env, "mod", "download", p.module+"@"+version)
	}
	goCmd(t, dir, env, "get", p.module+"@"+version)
	goCmd(t, dir, env, "build", "-o", "installcheck", ".")
	out, err := exec.CommandContext(t.Context(), filepath.Join(dir, "installcheck")).CombinedOutput()
	if err != nil {
		t.Fatalf("the program failed: %v\n%s", err, out)
	}
	return string(out)
}

// agentProgram registers Code Mode on a runner as the README shows, then
// prints the modules it was built from.
var agentProgram = template.Must(template.New("main.go").Parse(`package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"runtime/debug"

	"{{.ADK}}/agent"
	"{{.ADK}}/agent/llmagent"
	"{{.ADK}}/model"
	"{{.ADK}}/plugin"
	"{{.ADK}}/runner"
	"{{.ADK}}/session"
	"{{.ADK}}/tool"
	"{{.ADK}}/tool/functiontool"

	"{{.Plugin}}"
)

type cityArgs struct {
	City string ` + "`json:\"city\"`" + `
}

// offline is a model the program never calls.
type offline struct{}

func (offline) Name() string { return "offline" }

func (offline) GenerateContent(context.Context, *model.LLMRequest, bool) iter.Seq2[*model.LLMResponse, error] {
	return func(yield func(*model.LLMResponse, error) bool) {
		yield(nil, errors.New("this program makes no model call"))
	}
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run() error {
	weather, err := functiontool.New(functiontool.Config{Name: "get_weather", Description: "The weather of a city."},
		func(_ {{.ToolContext}}, a cityArgs) (map[string]any, error) {
			return map[string]any{"city": a.City, "temp_c": 18}, nil
		})
	if err != nil {
		return err
	}
	p := codemode.MustNew(codemode.Config{Tools: []tool.Tool{weather}})
	defer p.Close()
	a, err := llmagent.New(llmagent.Config{Name: "weather_agent", Model: offline{}, Instruction: "Use execute_code."})
	if err != nil {
		return err
	}
	if _, err := runner.New(runner.Config{
		AppName:        "installcheck",
		Agent:          a,
		SessionService: session.InMemoryService(),
		PluginConfig:   runner.PluginConfig{Plugins: []*plugin.Plugin{p}},
	}); err != nil {
		return err
	}
	fmt.Printf("runner ready: agent %s with plugin %s\n", a.Name(), p.Name())
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("the program has no build information")
	}
	for _, d := range info.Deps {
		fmt.Printf("dep %s %s", d.Path, d.Version)
		if d.Replace != nil {
			fmt.Printf(" => %s %s", d.Replace.Path, d.Replace.Version)
		}
		fmt.Println()
	}
	return nil
}
`))
