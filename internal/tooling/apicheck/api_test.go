package apicheck

import (
	"flag"
	"fmt"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/packages"
)

var update = flag.Bool("update", false, "rewrite the listings in api/ from the packages as they are")

// modules are the Go modules whose public API is listed: the directory
// from the repository's root and the listing's file in api/.
var modules = []struct{ dir, listing string }{
	{".", "codemode.txt"},
	{"adkv1", "adkv1.txt"},
	{"deploy", "deploy.txt"},
}

// TestPublicAPI compares each module's exported API with its listing.
func TestPublicAPI(t *testing.T) {
	for _, m := range modules {
		t.Run(m.listing, func(t *testing.T) {
			pkgs := load(t, filepath.Join("..", "..", "..", m.dir))
			lines, leaks := describe(pkgs)
			for _, l := range leaks {
				t.Errorf("%s: an exported declaration mentions an internal package's type", l)
			}
			got := strings.Join(lines, "\n") + "\n"
			path := filepath.Join("..", "..", "..", "api", m.listing)
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./internal/tooling/apicheck -update writes it)", err)
			}
			if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
				t.Errorf("the public API of %s differs from api/%s (-listed +now):\n%s\n"+
					"If the change is intended, run go test ./internal/tooling/apicheck -update and commit the listing with it.", m.dir, m.listing, diff)
			}
		})
	}
}

// load type-checks the public, non-main packages of the module in dir.
func load(t *testing.T, dir string) []*packages.Package {
	t.Helper()
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports | packages.NeedDeps,
		Dir:  dir,
		Env:  append(os.Environ(), "GOOS=linux", "GOARCH=amd64"),
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatal(err)
	}
	var public []*packages.Package
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if p.Name == "main" || isInternal(p.PkgPath) {
			continue
		}
		public = append(public, p)
	}
	slices.SortFunc(public, func(a, b *packages.Package) int { return strings.Compare(a.PkgPath, b.PkgPath) })
	return public
}

// isInternal reports whether a package path has an internal element.
func isInternal(path string) bool {
	return slices.Contains(strings.Split(path, "/"), "internal")
}

// describe lists the exported API of pkgs, sorted within each package, and
// the declarations that mention an internal package's type.
func describe(pkgs []*packages.Package) (lines, leaks []string) {
	for _, p := range pkgs {
		var own []string
		qual := func(other *types.Package) string {
			if other == p.Types {
				return ""
			}
			return other.Path()
		}
		add := func(decl string, ty types.Type) {
			own = append(own, "pkg "+p.PkgPath+", "+decl)
			if mentionsInternal(ty) {
				leaks = append(leaks, p.PkgPath+": "+decl)
			}
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			switch obj := obj.(type) {
			case *types.Const:
				add(fmt.Sprintf("const %s %s", name, types.TypeString(obj.Type(), qual)), obj.Type())
			case *types.Var:
				add(fmt.Sprintf("var %s %s", name, types.TypeString(obj.Type(), qual)), obj.Type())
			case *types.Func:
				add("func "+name+strings.TrimPrefix(types.TypeString(obj.Type(), qual), "func"), obj.Type())
			case *types.TypeName:
				describeType(obj, qual, add)
			}
		}
		slices.Sort(own)
		lines = append(lines, own...)
	}
	return lines, leaks
}

// describeType lists a type, its exported fields or interface methods, and
// the exported methods of its method set and its pointer's.
func describeType(obj *types.TypeName, qual types.Qualifier, add func(string, types.Type)) {
	name := obj.Name()
	if obj.IsAlias() {
		add(fmt.Sprintf("type %s = %s", name, types.TypeString(types.Unalias(obj.Type()), qual)), obj.Type())
		return
	}
	under := obj.Type().Underlying()
	switch u := under.(type) {
	case *types.Struct:
		add("type "+name+" struct", nil)
		for f := range u.Fields() {
			if f.Exported() {
				add(fmt.Sprintf("type %s struct, %s %s", name, f.Name(), types.TypeString(f.Type(), qual)), f.Type())
			}
		}
	case *types.Interface:
		add("type "+name+" interface", nil)
		for m := range u.Methods() {
			if m.Exported() {
				add(fmt.Sprintf("type %s interface, %s%s", name, m.Name(), strings.TrimPrefix(types.TypeString(m.Type(), qual), "func")), m.Type())
			}
		}
	default:
		add(fmt.Sprintf("type %s %s", name, types.TypeString(under, qual)), under)
	}
	if _, isIface := under.(*types.Interface); isIface {
		return
	}
	values := types.NewMethodSet(obj.Type())
	for sel := range types.NewMethodSet(types.NewPointer(obj.Type())).Methods() {
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		recv := "*" + name
		if values.Lookup(m.Pkg(), m.Name()) != nil {
			recv = name
		}
		sig := types.TypeString(m.Type(), qual)
		add(fmt.Sprintf("method (%s) %s%s", recv, m.Name(), strings.TrimPrefix(sig, "func")), m.Type())
	}
}

// mentionsInternal reports whether a type, or any type it is made of,
// is declared in an internal package.
func mentionsInternal(t types.Type) bool {
	seen := map[types.Type]bool{}
	var walk func(types.Type) bool
	walk = func(t types.Type) bool {
		if t == nil || seen[t] {
			return false
		}
		seen[t] = true
		switch t := t.(type) {
		case *types.Named:
			if pkg := t.Obj().Pkg(); pkg != nil && isInternal(pkg.Path()) {
				return true
			}
			for a := range t.TypeArgs().Types() {
				if walk(a) {
					return true
				}
			}
			return false
		case *types.Alias:
			return walk(types.Unalias(t))
		case *types.Pointer:
			return walk(t.Elem())
		case *types.Slice:
			return walk(t.Elem())
		case *types.Array:
			return walk(t.Elem())
		case *types.Map:
			return walk(t.Key()) || walk(t.Elem())
		case *types.Chan:
			return walk(t.Elem())
		case *types.Signature:
			return walk(t.Params()) || walk(t.Results())
		case *types.Tuple:
			for v := range t.Variables() {
				if walk(v.Type()) {
					return true
				}
			}
		case *types.Struct:
			for f := range t.Fields() {
				if f.Exported() && walk(f.Type()) {
					return true
				}
			}
		case *types.Interface:
			for m := range t.Methods() {
				if m.Exported() && walk(m.Type()) {
					return true
				}
			}
		}
		return false
	}
	return walk(t)
}
