package archtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// pkg is what the tests read of one package from `go list -deps -json`:
// its production imports and dependencies (test files left out).
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	Standard   bool
	DepOnly    bool     // a dependency, not a package of this module
	Imports    []string // direct imports of the non-test files
	Deps       []string // every package the non-test files need, transitively
}

// module is the module's packages and everything they depend on.
type module struct {
	path string          // the module path, github.com/agentd/agentd
	root string          // the directory of go.mod
	pkgs map[string]*pkg // by import path, dependencies included
	own  []string        // the module's packages, sorted
}

// rel is p relative to the module: "store", "connect/telegram".
func (m *module) rel(p string) string {
	if p == m.path {
		return "."
	}
	return strings.TrimPrefix(p, m.path+"/")
}

// isOwn reports whether import path p is a package of this module.
func (m *module) isOwn(p string) bool { return p == m.path || strings.HasPrefix(p, m.path+"/") }

var (
	loadOnce sync.Once
	loaded   *module
	loadErr  error
)

// load runs `go list -deps -json ./...` once per test binary.
func load(t *testing.T) *module {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = list() })
	if loadErr != nil {
		t.Fatal(loadErr)
	}
	return loaded
}

func list() (*module, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	modPath, err := goCmd(root, "list", "-m")
	if err != nil {
		return nil, err
	}
	out, err := goCmd(root, "list", "-deps", "-json=ImportPath,Name,Dir,Standard,DepOnly,Imports,Deps", "./...")
	if err != nil {
		return nil, err
	}
	m := &module{path: strings.TrimSpace(modPath), root: root, pkgs: map[string]*pkg{}}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		m.pkgs[p.ImportPath] = &p
		if !p.DepOnly && m.isOwn(p.ImportPath) {
			m.own = append(m.own, p.ImportPath)
		}
	}
	slices.Sort(m.own)
	return m, nil
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", errors.New("go " + strings.Join(args, " ") + ": " + err.Error() + ": " + stderr.String())
	}
	return string(out), nil
}

// moduleRoot is the directory of go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// short names a package of the module by its path in the module, any
// other by its import path.
func (m *module) short(p string) string {
	if m.isOwn(p) {
		return m.rel(p)
	}
	return p
}
