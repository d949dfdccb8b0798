// Command codestats prints the size figures issue 23 item 6 is measured by:
// non-test lines per package, the fields and methods of a named struct, and
// every function longer than a limit (lines from `func` to the closing
// brace), for the packages under the directories given.
//
//	go run ./hack/codestats -type Executor -max 80 pkg/k8s
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	typ := flag.String("type", "Executor", "struct whose fields and methods to count")
	max := flag.Int("max", 80, "report functions longer than this many lines")
	tests := flag.Bool("tests", false, "include _test.go files")
	flag.Parse()
	fset := token.NewFileSet()
	lines := map[string]int{}
	type fn struct {
		name string
		n    int
	}
	var long []fn
	fields, methods := map[string]int{}, map[string]int{}
	for _, root := range flag.Args() {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			if !*tests && strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			dir := filepath.Dir(path)
			lines[dir] += fset.File(f.Pos()).LineCount()
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					n := fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1
					name := d.Name.Name
					if d.Recv != nil && len(d.Recv.List) > 0 {
						t := d.Recv.List[0].Type
						if s, ok := t.(*ast.StarExpr); ok {
							t = s.X
						}
						if id, ok := t.(*ast.Ident); ok {
							name = id.Name + "." + name
							if id.Name == *typ {
								methods[dir]++
							}
						}
					}
					if n > *max {
						long = append(long, fn{dir + " " + name, n})
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || ts.Name.Name != *typ {
							continue
						}
						if st, ok := ts.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								if len(fl.Names) == 0 {
									fields[dir]++
								}
								fields[dir] += len(fl.Names)
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	var dirs []string
	total := 0
	for d, n := range lines {
		dirs = append(dirs, d)
		total += n
	}
	sort.Strings(dirs)
	fmt.Println("lines per package:")
	for _, d := range dirs {
		fmt.Printf("  %6d %s\n", lines[d], d)
	}
	fmt.Printf("  %6d total\n", total)
	for _, d := range dirs {
		if fields[d]+methods[d] > 0 {
			fmt.Printf("%s.%s: %d fields, %d methods\n", d, *typ, fields[d], methods[d])
		}
	}
	sort.Slice(long, func(i, j int) bool { return long[i].n > long[j].n })
	fmt.Printf("functions over %d lines: %d\n", *max, len(long))
	for _, f := range long {
		fmt.Printf("  %4d %s\n", f.n, f.name)
	}
}
