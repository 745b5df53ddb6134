package bridge

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// apiFileRE names the per-API files of bridge/ (NN_name.go).
var apiFileRE = regexp.MustCompile(`^\d\d_[a-z0-9_]+\.go$`)

// arrow is one use of a package-level name across two files of bridge/.
type arrow struct {
	from, to string // file names
	pos      token.Position
	name     string
}

// bridgeArrows type-checks the non-test files of bridge/ on their own
// (imported packages are left empty: only bridge's own names resolve, which
// is all the check needs) and returns every use of a package-level function,
// method, type, variable or constant of bridge/ from another file.
func bridgeArrows(t *testing.T) []arrow {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "bridge" {
			continue
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no package bridge in bridge/")
	}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{
		Importer: emptyImporter{importer.Default()},
		Error:    func(error) {}, // imported names do not resolve; bridge's own do
	}
	tpkg, _ := conf.Check("bridge", fset, files, info)
	if tpkg == nil {
		t.Fatal("type-checking bridge/ produced no package")
	}
	// declaredIn is where an object of bridge/ is declared (package level:
	// functions, methods, types, vars, consts; and struct fields).
	declaredIn := func(obj types.Object) (string, bool) {
		if obj == nil || obj.Pkg() != tpkg || !obj.Pos().IsValid() {
			return "", false
		}
		switch o := obj.(type) {
		case *types.Func:
		case *types.TypeName, *types.Const, *types.Var:
			if v, ok := o.(*types.Var); ok && !v.IsField() && o.Parent() != tpkg.Scope() {
				return "", false // a local or a parameter
			}
			if o.Parent() != nil && o.Parent() != tpkg.Scope() {
				if _, isVar := o.(*types.Var); !isVar {
					return "", false // a local type or constant
				}
			}
		default:
			return "", false
		}
		return filepath.Base(fset.Position(obj.Pos()).Filename), true
	}
	var out []arrow
	for id, obj := range info.Uses {
		to, ok := declaredIn(obj)
		if !ok {
			continue
		}
		pos := fset.Position(id.Pos())
		from := filepath.Base(pos.Filename)
		if from == to {
			continue
		}
		out = append(out, arrow{from: from, to: to, pos: pos, name: obj.Name()})
	}
	if len(out) < 500 {
		// bridge/ has well over a thousand; fewer means the check lost its
		// way (a parse or type problem) and would pass for nothing.
		t.Fatalf("only %d cross-file uses resolved in bridge/: the check cannot be trusted", len(out))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pos.Filename != out[j].pos.Filename {
			return out[i].pos.Filename < out[j].pos.Filename
		}
		return out[i].pos.Offset < out[j].pos.Offset
	})
	return out
}

// emptyImporter gives every import outside the standard library an empty,
// complete package, so the check needs neither export data nor the module
// cache; standard-library imports go to the default importer.
type emptyImporter struct{ std types.Importer }

func (e emptyImporter) Import(path string) (*types.Package, error) {
	if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
		if p, err := e.std.Import(path); err == nil {
			return p, nil
		}
	}
	name := path[strings.LastIndex(path, "/")+1:]
	switch path {
	case "github.com/kafka-iggy/kafka-iggy/codec/iggy", "github.com/kafka-iggy/kafka-iggy/bridge/iggy":
		name = "iggy"
	}
	p := types.NewPackage(path, name)
	p.MarkComplete()
	return p, nil
}

// TestAPIFilesAreLeaves enforces bridge/'s layout: the per-API files
// (NN_name.go) are leaves on a shared floor. No API file uses a function,
// method, type, variable or constant declared in another API file, and no
// floor file uses one declared in an API file: an API file's code is its
// own, and what several APIs need lives on the floor.
func TestAPIFilesAreLeaves(t *testing.T) {
	arrows := bridgeArrows(t)
	var bad []string
	for _, a := range arrows {
		if !apiFileRE.MatchString(a.to) {
			continue // onto the floor: fine
		}
		kind := "API file"
		if !apiFileRE.MatchString(a.from) {
			kind = "floor file"
		}
		bad = append(bad, fmt.Sprintf("%s:%d: %s %s uses %s from %s", a.from, a.pos.Line, kind, a.from, a.name, a.to))
	}
	if len(bad) > 0 {
		t.Errorf("%d uses of API-file names from other files (move what is shared to a floor file):\n%s",
			len(bad), strings.Join(bad, "\n"))
	}
}

// TestBridgeArrowCount logs the file-to-file dependency figures of bridge/
// (go test -v -run TestBridgeArrowCount ./bridge/), the measure the leaf
// rule is about.
func TestBridgeArrowCount(t *testing.T) {
	arrows := bridgeArrows(t)
	pairs := map[[2]string]int{}
	for _, a := range arrows {
		pairs[[2]string{a.from, a.to}]++
	}
	up, nn, uses := 0, 0, 0
	for p, n := range pairs {
		if apiFileRE.MatchString(p[1]) {
			if apiFileRE.MatchString(p[0]) {
				nn++
			} else {
				up++
			}
			uses += n
		}
	}
	t.Logf("bridge/: %d file-to-file arrows (%d uses); into API files: %d from API files, %d from floor files (%d uses)",
		len(pairs), len(arrows), nn, up, uses)
}
