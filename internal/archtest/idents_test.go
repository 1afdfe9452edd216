package archtest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// notIdentifiers are the single words docs/architecture.md and the package
// docs put in backticks that name no Go declaration: JSON members, status
// values, roles. Add a word here only when it is not meant as a Go name.
var notIdentifiers = []string{
	"error", "lost", "model", "owner", "stream", "tool", "user", "userId", "working", "requireApproval",
	"developer", "temperature", // a Responses item role, a request member
	"message.completed",                      // an event type
	"answerCallbackQuery", "editMessageText", // Telegram Bot API methods
}

// TestDocIdentifiers checks that docs/architecture.md and the package
// docs (every doc.go of the module) cite only what exists. A citation is:
//
//   - in docs/architecture.md (fenced code left out) and in doc.go
//     comments, the text of a `backticked` span;
//   - in doc.go comments, also a doc link [Name], [Type.Member] or
//     [pkg.Name], and, in plain text, a word pkg.Name[.Member] whose pkg is
//     a package of this module, Type.Member whose Type is declared in the
//     doc's own package, and a file name such as worker.go.
//
// Before it is resolved a citation loses a leading * or &, a call's
// arguments (llm.CharacterFrom(agent.Fields) is llm.CharacterFrom), a line
// suffix (file.go:12), and (*T).M is read as T.M. Then:
//
//   - a file path (ending .go, or with a slash) must exist: relative to the
//     module root when it has a slash, else in the doc's package (in
//     docs/architecture.md, in some package of the module);
//   - pkg.Name and pkg.Type.Member, where pkg is the name of a package of
//     this module (store, turn, telegram for connect/telegram), must be declared
//     in that package, Member being a method, a field or an interface
//     method of Type (promoted ones included);
//   - Type.Member, Type a type of the module (of the doc's own package
//     first), must have that member; a capitalized first part that is no
//     type of the module fails;
//   - a single word must be a package of the module, a Go predeclared
//     name, or declared somewhere in the module (top level, method or
//     field), unless it is ALL_CAPS (an environment variable, a code),
//     snake_case (a table, a JSON member) or listed in notIdentifiers.
//
// Skipped: spans with spaces or with <, >, {, }, :, =, quotes or commas
// (commands, requests, templates, literals), paths starting with / or .,
// and x.y whose x is neither a package of the module nor one of its types
// (a variable such as s.gate, a third-party package such as
// openapi3filter.ValidateRequest, an event type such as message.completed).
func TestDocIdentifiers(t *testing.T) {
	m := load(t)
	ix := index(t, m)
	arch := filepath.Join(m.root, "docs", "architecture.md")
	raw, err := os.ReadFile(arch)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	defer func() { t.Logf("checked %d citations", n) }()
	for _, c := range backticked(withoutFences(string(raw)), 1) {
		n++
		if why := ix.check(c.text, "", false); why != "" {
			t.Errorf("docs/architecture.md:%d: `%s` %s", c.line, c.text, why)
		}
	}
	for _, rel := range ix.rels {
		path := filepath.Join(ix.dirs[rel], "doc.go")
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if os.IsNotExist(err) || (err == nil && f.Doc == nil) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		first := fset.Position(f.Doc.Pos()).Line
		text := f.Doc.Text()
		where := filepath.ToSlash(filepath.Join(rel, "doc.go"))
		for _, c := range backticked(text, first) {
			n++
			if why := ix.check(c.text, rel, false); why != "" {
				t.Errorf("%s:%d: `%s` %s", where, c.line, c.text, why)
			}
		}
		for _, c := range plainCitations(text, first) {
			n++
			if why := ix.check(c.text, rel, true); why != "" {
				t.Errorf("%s:%d: %s %s", where, c.line, c.text, why)
			}
		}
	}
}

// citation is a cited text and its line.
type citation struct {
	text string
	line int
}

// withoutFences blanks the lines of fenced code blocks, keeping the line
// count.
func withoutFences(doc string) string {
	lines := strings.Split(doc, "\n")
	var fence string
	for i, l := range lines {
		trimmed := strings.TrimSpace(l)
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			lines[i] = ""
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		}
	}
	return strings.Join(lines, "\n")
}

// backticked returns the text of every `span` in s; first is the line of
// s's first line.
func backticked(s string, first int) []citation {
	var out []citation
	for {
		i := strings.IndexByte(s, '`')
		if i < 0 {
			return out
		}
		first += strings.Count(s[:i], "\n")
		s = s[i+1:]
		j := strings.IndexByte(s, '`')
		if j < 0 {
			return out
		}
		out = append(out, citation{s[:j], first})
		first += strings.Count(s[:j], "\n")
		s = s[j+1:]
	}
}

var (
	codeSpan  = regexp.MustCompile("`[^`]*`")
	docLink   = regexp.MustCompile(`\[(\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)\]`)
	plainName = regexp.MustCompile(`(?:^|[^\w./\-\[])(\*?[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)`)
	plainFile = regexp.MustCompile(`(?:^|[^\w./\-])(\w[\w\-]*\.go)\b`)
)

// plainCitations returns the doc links, qualified names and file names of
// a doc comment's text outside backticks.
func plainCitations(text string, first int) []citation {
	var out []citation
	for n, line := range strings.Split(text, "\n") {
		line = codeSpan.ReplaceAllString(line, "")
		for _, re := range []*regexp.Regexp{docLink, plainName, plainFile} {
			for _, sm := range re.FindAllStringSubmatch(line, -1) {
				text := sm[1]
				if re == docLink {
					text = "[" + text + "]"
				}
				out = append(out, citation{text, first + n})
			}
		}
	}
	return out
}

// decls is what one package declares.
type decls struct {
	names   map[string]bool            // top-level functions, types, variables, constants
	members map[string]map[string]bool // by type: methods, fields, interface methods
	embeds  map[string][][2]string     // by type: embedded types as {package rel, type}
}

// ident is the module's declarations, for resolving citations.
type ident struct {
	root   string
	rels   []string          // the module's packages, by path in the module
	dirs   map[string]string // their directories
	byName map[string]string // package name (telegram) or path (connect/telegram) → rel
	pkgs   map[string]*decls // by rel
	all    map[string]bool   // every name declared anywhere: top level, methods, fields
}

// index parses the Go files of the module's packages, tests included (a
// doc may cite a test, such as TestEveryStoreCodeIsMapped).
func index(t *testing.T, m *module) *ident {
	t.Helper()
	ix := &ident{root: m.root, dirs: map[string]string{}, byName: map[string]string{}, pkgs: map[string]*decls{}, all: map[string]bool{}}
	for _, p := range m.own {
		rel, pk := m.rel(p), m.pkgs[p]
		ix.rels = append(ix.rels, rel)
		ix.dirs[rel] = pk.Dir
		ix.byName[rel] = rel
		if pk.Name != "main" {
			ix.byName[pk.Name] = rel
		}
	}
	for _, rel := range ix.rels {
		d := &decls{names: map[string]bool{}, members: map[string]map[string]bool{}, embeds: map[string][][2]string{}}
		ix.pkgs[rel] = d
		entries, err := os.ReadDir(ix.dirs[rel])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(ix.dirs[rel], e.Name()), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ix.add(m, rel, d, f)
		}
	}
	return ix
}

// add records the declarations of file f of package rel.
func (ix *ident) add(m *module, rel string, d *decls, f *ast.File) {
	imported := map[string]string{} // local name → rel, for the module's packages
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if !m.isOwn(path) {
			continue
		}
		name := filepath.Base(path)
		if pk := m.pkgs[path]; pk != nil {
			name = pk.Name
		}
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imported[name] = m.rel(path)
	}
	member := func(typ, name string) {
		if d.members[typ] == nil {
			d.members[typ] = map[string]bool{}
		}
		d.members[typ][name] = true
		ix.all[name] = true
	}
	embed := func(typ string, x ast.Expr) {
		if star, ok := x.(*ast.StarExpr); ok {
			x = star.X
		}
		switch x := x.(type) {
		case *ast.Ident:
			member(typ, x.Name)
			d.embeds[typ] = append(d.embeds[typ], [2]string{rel, x.Name})
		case *ast.SelectorExpr:
			member(typ, x.Sel.Name)
			if pkg, ok := x.X.(*ast.Ident); ok && imported[pkg.Name] != "" {
				d.embeds[typ] = append(d.embeds[typ], [2]string{imported[pkg.Name], x.Sel.Name})
			}
		}
	}
	for _, decl := range f.Decls {
		switch decl := decl.(type) {
		case *ast.FuncDecl:
			if decl.Recv == nil {
				d.names[decl.Name.Name] = true
				ix.all[decl.Name.Name] = true
				continue
			}
			member(receiverType(decl.Recv.List[0].Type), decl.Name.Name)
		case *ast.GenDecl:
			for _, spec := range decl.Specs {
				switch spec := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range spec.Names {
						d.names[n.Name] = true
						ix.all[n.Name] = true
					}
				case *ast.TypeSpec:
					typ := spec.Name.Name
					d.names[typ] = true
					ix.all[typ] = true
					if d.members[typ] == nil {
						d.members[typ] = map[string]bool{}
					}
					switch st := spec.Type.(type) {
					case *ast.StructType:
						for _, fl := range st.Fields.List {
							if len(fl.Names) == 0 {
								embed(typ, fl.Type)
							}
							for _, n := range fl.Names {
								member(typ, n.Name)
							}
						}
					case *ast.InterfaceType:
						for _, fl := range st.Methods.List {
							if len(fl.Names) == 0 {
								embed(typ, fl.Type)
							}
							for _, n := range fl.Names {
								member(typ, n.Name)
							}
						}
					}
				}
			}
		}
	}
}

// receiverType is the base type name of a method's receiver.
func receiverType(x ast.Expr) string {
	for {
		switch e := x.(type) {
		case *ast.StarExpr:
			x = e.X
		case *ast.IndexExpr:
			x = e.X
		case *ast.IndexListExpr:
			x = e.X
		case *ast.Ident:
			return e.Name
		default:
			return ""
		}
	}
}

// hasMember reports whether type typ of package rel has member name,
// directly or promoted from an embedded type.
func (ix *ident) hasMember(rel, typ, name string, depth int) bool {
	d := ix.pkgs[rel]
	if d == nil || depth > 4 {
		return false
	}
	if d.members[typ][name] {
		return true
	}
	for _, e := range d.embeds[typ] {
		if ix.hasMember(e[0], e[1], name, depth+1) {
			return true
		}
	}
	return false
}

var (
	identRe    = regexp.MustCompile(`^[A-Za-z_]\w*$`)
	allCaps    = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	snakeCase  = regexp.MustCompile(`^[a-z0-9]+(_[a-z0-9]+)+$`)
	methodExpr = regexp.MustCompile(`^\(\*?(\w+)\)\.(\w+)$`)
	lineSuffix = regexp.MustCompile(`(\.go):\d+(-\d+)?(,\d+)*$`)
)

// check resolves citation c made in the doc of package home ("" for
// docs/architecture.md); plain marks a citation outside backticks, which
// is checked only when it names a package of the module or a type of
// home. It returns why c resolves to nothing, or "".
func (ix *ident) check(c, home string, plain bool) string {
	link := strings.HasPrefix(c, "[") && strings.HasSuffix(c, "]")
	c = strings.Trim(c, "[]")
	if sm := methodExpr.FindStringSubmatch(c); sm != nil {
		c = sm[1] + "." + sm[2]
	}
	c = strings.TrimLeft(c, "*&")
	if i := strings.IndexByte(c, '('); i > 0 && strings.HasSuffix(c, ")") {
		c = c[:i]
	}
	c = lineSuffix.ReplaceAllString(c, "$1")
	if c == "" || strings.ContainsAny(c, " \t\n<>{}:=\"',") || strings.HasPrefix(c, "/") || strings.HasPrefix(c, ".") {
		return ""
	}
	if strings.HasSuffix(c, ".go") {
		return ix.checkFile(c, home)
	}
	if strings.Contains(c, "/") {
		if _, err := os.Stat(filepath.Join(ix.root, filepath.FromSlash(c))); err != nil {
			return "is no file or directory of the module"
		}
		return ""
	}
	parts := strings.Split(c, ".")
	for _, p := range parts {
		if !identRe.MatchString(p) || len(parts) > 1 && snakeCase.MatchString(p) {
			return "" // not Go, or a JSON path such as message.tool_calls
		}
	}
	if slices.Contains(notIdentifiers, c) {
		return ""
	}
	if link && home != "" {
		return ix.checkLink(parts, home)
	}
	if len(parts) == 1 {
		if plain {
			return ""
		}
		return ix.checkWord(c)
	}
	if rel, ok := ix.byName[parts[0]]; ok && !ix.typeNamed(home, parts[0]) {
		return ix.checkIn(rel, parts[1:])
	}
	if home != "" && ix.pkgs[home].names[parts[0]] {
		return ix.checkIn(home, parts)
	}
	if plain {
		return ""
	}
	var holders []string
	for _, rel := range ix.rels {
		if _, ok := ix.pkgs[rel].members[parts[0]]; ok {
			holders = append(holders, rel)
		}
	}
	if len(holders) == 0 {
		if parts[0][0] >= 'A' && parts[0][0] <= 'Z' {
			return "names no type of the module"
		}
		return "" // a variable, a third-party package, an event type
	}
	for _, rel := range holders {
		if ix.checkIn(rel, parts) == "" {
			return ""
		}
	}
	return fmt.Sprintf("names no member of %s in %s", parts[0], strings.Join(holders, ", "))
}

// typeNamed reports whether home declares a type (or other name) called n,
// which then wins over a package of that name.
func (ix *ident) typeNamed(home, n string) bool {
	return home != "" && ix.pkgs[home].names[n]
}

// checkIn resolves Name or Type.Member in package rel.
func (ix *ident) checkIn(rel string, parts []string) string {
	d := ix.pkgs[rel]
	if !d.names[parts[0]] {
		return fmt.Sprintf("is not declared in %s", rel)
	}
	switch len(parts) {
	case 1:
		return ""
	case 2:
		if ix.hasMember(rel, parts[0], parts[1], 0) {
			return ""
		}
		return fmt.Sprintf("names no method or field of %s.%s", rel, parts[0])
	}
	return "" // deeper selections are not followed
}

// checkLink resolves a doc link of package home's doc: [Name],
// [Type.Member] in home, or [pkg.Name].
func (ix *ident) checkLink(parts []string, home string) string {
	if ix.pkgs[home].names[parts[0]] {
		return ix.checkIn(home, parts)
	}
	if rel, ok := ix.byName[parts[0]]; ok && len(parts) > 1 {
		return ix.checkIn(rel, parts[1:])
	}
	return fmt.Sprintf("is not declared in %s", home)
}

// checkWord resolves a single backticked word.
func (ix *ident) checkWord(w string) string {
	switch {
	case allCaps.MatchString(w), snakeCase.MatchString(w), slices.Contains(notIdentifiers, w):
		return ""
	case ix.byName[w] != "", types.Universe.Lookup(w) != nil, ix.all[w]:
		return ""
	}
	return "is declared nowhere in the module (if it is no Go name, add it to notIdentifiers)"
}

// checkFile resolves a cited Go file.
func (ix *ident) checkFile(f, home string) string {
	if strings.Contains(f, "/") {
		if _, err := os.Stat(filepath.Join(ix.root, filepath.FromSlash(f))); err != nil {
			return "is no file of the module"
		}
		return ""
	}
	dirs := []string{ix.dirs[home]}
	if home == "" {
		dirs = nil
		for _, rel := range ix.rels {
			dirs = append(dirs, ix.dirs[rel])
		}
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return ""
		}
	}
	if home != "" {
		return "is no file of " + home
	}
	return "is no file of any package"
}
