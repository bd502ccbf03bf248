package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the wanted outputs of testdata/*/*.txtar")

// A golden case of a command is a txtar archive under testdata/COMMAND/
// with these files:
//
//	reason        why the case exists (required)
//	args          the command's arguments, one a line; $DIR stands for the
//	              directory the case's input files are written to
//	decls.json, openapi.yaml, ...
//	              input files, written to $DIR
//	want/stdout   wanted standard output
//	want/stderr   wanted standard error, with $DIR for the directory
//	want/exit     wanted exit status
//
// Run with -update to rewrite the want/ files from what the command does.
func runGolden(t *testing.T, command string, run func(args []string, stdout, stderr *bytes.Buffer) int) {
	paths, err := filepath.Glob(filepath.Join("testdata", command, "*.txtar"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no golden cases in testdata/%s", command)
	}
	for _, p := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(p), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(p)
			if err != nil {
				t.Fatal(err)
			}
			files := map[string]string{}
			for _, f := range ar.Files {
				files[f.Name] = string(f.Data)
			}
			if strings.TrimSpace(files["reason"]) == "" {
				t.Fatalf("%s has no reason", p)
			}
			dir := t.TempDir()
			for name, data := range files {
				if name == "reason" || name == "args" || strings.HasPrefix(name, "want/") {
					continue
				}
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, l := range strings.Split(strings.TrimSpace(files["args"]), "\n") {
				if l = strings.TrimSpace(l); l != "" {
					args = append(args, strings.ReplaceAll(l, "$DIR", dir))
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			got := map[string]string{
				"want/stdout": stdout.String(),
				"want/stderr": strings.ReplaceAll(stderr.String(), dir, "$DIR"),
				"want/exit":   strconv.Itoa(code) + "\n",
			}
			if *update {
				var kept []txtar.File
				for _, f := range ar.Files {
					if !strings.HasPrefix(f.Name, "want/") {
						kept = append(kept, f)
					}
				}
				for _, name := range []string{"want/exit", "want/stderr", "want/stdout"} {
					kept = append(kept, txtar.File{Name: name, Data: []byte(got[name])})
				}
				ar.Files = kept
				if err := os.WriteFile(p, txtar.Format(ar), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			for name, g := range got {
				if diff := cmp.Diff(files[name], g); diff != "" {
					t.Errorf("%s: %s differs (-want +got); rerun with -update if the change is meant:\n%s", p, name, diff)
				}
			}
		})
	}
}
