// Command apidump prints the exported API of Go packages, one declaration
// per line block without comments or unexported parts, in a stable order,
// so that a committed copy (api/*.txt) shows every change to the public
// surface in review and ./scripts/api fails when one was not meant.
//
// Usage: go run ./internal/apidump DIR...   (each DIR a package directory)
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: apidump DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		out, err := dump(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "apidump:", err)
			os.Exit(1)
		}
		fmt.Print(out)
	}
}

// dump returns the exported declarations of the package in dir: its Go
// files for this platform and build tags (go/build), without tests.
func dump(dir string) (string, error) {
	pkg, err := build.ImportDir(dir, 0)
	if err != nil {
		return "", err
	}
	if pkg.Name == "main" {
		return "", nil
	}
	fset := token.NewFileSet()
	var lines []string
	for _, name := range pkg.GoFiles {
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", err
		}
		for _, decl := range file.Decls {
			lines = append(lines, declLines(fset, decl)...)
		}
	}
	sort.Strings(lines)
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// declLines returns one entry per exported name declared by decl.
func declLines(fset *token.FileSet, decl ast.Decl) []string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
			return nil
		}
		d.Doc, d.Body = nil, nil
		return []string{render(fset, d)}
	case *ast.GenDecl:
		var out []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.TypeSpec:
				if !s.Name.IsExported() {
					continue
				}
				s.Doc, s.Comment = nil, nil
				s.Type = exportedOnly(s.Type)
				out = append(out, "type "+render(fset, s))
			case *ast.ValueSpec:
				for i, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					line := d.Tok.String() + " " + n.Name
					if s.Type != nil {
						line += " " + render(fset, s.Type)
					}
					if d.Tok == token.CONST && i < len(s.Values) {
						line += " = " + render(fset, s.Values[i])
					}
					out = append(out, line)
				}
			}
		}
		return out
	}
	return nil
}

// exportedRecv reports whether a method's receiver type is exported.
func exportedRecv(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	t := recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
		case *ast.IndexExpr:
			t = x.X
		case *ast.IndexListExpr:
			t = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// exportedOnly drops unexported fields and methods, and comments, from
// struct and interface types.
func exportedOnly(t ast.Expr) ast.Expr {
	switch x := t.(type) {
	case *ast.StructType:
		x.Fields.List = exportedFields(x.Fields.List)
	case *ast.InterfaceType:
		x.Methods.List = exportedFields(x.Methods.List)
	}
	return t
}

func exportedFields(fields []*ast.Field) []*ast.Field {
	var kept []*ast.Field
	for _, f := range fields {
		f.Doc, f.Comment = nil, nil
		if len(f.Names) == 0 { // embedded
			if id := embeddedName(f.Type); id != "" && ast.IsExported(id) {
				kept = append(kept, f)
			}
			continue
		}
		var names []*ast.Ident
		for _, n := range f.Names {
			if n.IsExported() {
				names = append(names, n)
			}
		}
		if len(names) > 0 {
			f.Names = names
			kept = append(kept, f)
		}
	}
	return kept
}

func embeddedName(t ast.Expr) string {
	switch x := t.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.StarExpr:
		return embeddedName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.IndexExpr:
		return embeddedName(x.X)
	}
	return "exported" // type constraints and the like are kept
}

// render prints node on one logical block with comments gone.
func render(fset *token.FileSet, node any) string {
	var buf bytes.Buffer
	cfg := printer.Config{Mode: printer.UseSpaces, Tabwidth: 4}
	if err := cfg.Fprint(&buf, fset, node); err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return buf.String()
}
