package main

import (
	"strings"
	"testing"
)

const placeholder = "v0.0.0-00010101000000-000000000000"

func TestRewriteGoMod(t *testing.T) {
	in := `module example.com/r/sub

go 1.26.8

require (
	example.com/other v1.2.0
	example.com/r ` + placeholder + ` // the tree
)

require example.com/indirect v0.3.0 // indirect
`
	want := strings.Replace(in, placeholder, "v0.4.0", 1)
	got, err := rewriteGoMod("go.mod", []byte(in), []string{"example.com/r"}, "v0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("rewritten go.mod:\n%s\nwant:\n%s", got, want)
	}
}

func TestRewriteGoModAddsMissingRequirement(t *testing.T) {
	got, err := rewriteGoMod("go.mod", []byte("module example.com/r/sub\n\ngo 1.26.8\n"), []string{"example.com/r"}, "v0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "require example.com/r v0.4.0\n") {
		t.Errorf("rewritten go.mod does not require example.com/r v0.4.0:\n%s", got)
	}
}

func TestRewriteGoModRefusesReplace(t *testing.T) {
	in := "module example.com/r/sub\n\ngo 1.26.8\n\nrequire example.com/r v0.3.0\n\nreplace example.com/r => ../\n"
	_, err := rewriteGoMod("go.mod", []byte(in), []string{"example.com/r"}, "v0.4.0")
	if err == nil || !strings.Contains(err.Error(), "remove the replace") {
		t.Errorf("rewriteGoMod with a replace of the required module = %v, want an error saying to remove it", err)
	}
}

func TestRewriteGoSum(t *testing.T) {
	// The lines of other modules are kept as they are, in the go command's
	// order (v0.9.0 before v0.10.0); the required module's old lines go and
	// its new ones take their place in that order.
	in := `example.com/a v0.9.0 h1:a9=
example.com/a v0.9.0/go.mod h1:a9mod=
example.com/a v0.10.0 h1:a10=
example.com/a v0.10.0/go.mod h1:a10mod=
example.com/r v0.3.0 h1:old=
example.com/r v0.3.0/go.mod h1:oldmod=
example.com/z v1.0.0/go.mod h1:zmod=
`
	want := `example.com/a v0.9.0 h1:a9=
example.com/a v0.9.0/go.mod h1:a9mod=
example.com/a v0.10.0 h1:a10=
example.com/a v0.10.0/go.mod h1:a10mod=
example.com/r v0.4.0 h1:new=
example.com/r v0.4.0/go.mod h1:newmod=
example.com/z v1.0.0/go.mod h1:zmod=
`
	got, err := rewriteGoSum("go.sum", []byte(in), map[string]sums{"example.com/r": {zip: "h1:new=", goMod: "h1:newmod="}}, "v0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("rewritten go.sum:\n%s\nwant:\n%s", got, want)
	}
}

func TestRewriteGoSumRefusesMalformedLine(t *testing.T) {
	_, err := rewriteGoSum("go.sum", []byte("example.com/a v0.9.0\n"), map[string]sums{"example.com/r": {}}, "v0.4.0")
	if err == nil || !strings.Contains(err.Error(), "go.sum:1: malformed line") {
		t.Errorf("rewriteGoSum of a line without a hash = %v, want an error naming the line", err)
	}
}

func TestRewriteGoWork(t *testing.T) {
	in := "go 1.26.8\n\nuse (\n\t.\n\t..\n)\n\nreplace example.com/r " + placeholder + " => ../\n\nreplace example.com/other v1.0.0 => ../other\n"
	want := "go 1.26.8\n\nuse (\n\t.\n\t..\n)\n\nreplace example.com/other v1.0.0 => ../other\n\nreplace example.com/r v0.4.0 => ../\n"
	got, err := rewriteGoWork("go.work", []byte(in), []string{"example.com/r"}, "v0.4.0")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("rewritten go.work:\n%s\nwant:\n%s", got, want)
	}
}
