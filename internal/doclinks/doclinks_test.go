package doclinks_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentd/agentd/internal/doclinks"
)

// TestRepositoryDocs checks every relative link of README.md and of the
// Markdown files under docs/: each file it names exists and each anchor is
// a heading of its document. A section removed while links still point to
// it fails here.
func TestRepositoryDocs(t *testing.T) {
	root := repositoryRoot(t)
	docs := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.EqualFold(filepath.Ext(path), ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			docs = append(docs, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	problems, err := doclinks.Check(root, docs...)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("dead link %s", p)
	}
	if len(problems) == 0 {
		t.Logf("every relative link of %s resolves", strings.Join(docs, ", "))
	}
}

// repositoryRoot is the directory of go.mod above this package.
func repositoryRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// TestCheckFixture runs the checker over testdata/guide.md, whose links
// each exercise one rule, and expects exactly its dead ones.
func TestCheckFixture(t *testing.T) {
	problems, err := doclinks.Check("testdata", "guide.md", "other.md")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range problems {
		got = append(got, p.String())
	}
	want := []string{
		"guide.md:39: #webhooks: no heading with this anchor in guide.md",
		"guide.md:40: #use-an-agent-from-any-openai-client: no heading with this anchor in guide.md",
		"guide.md:41: missing.md: no such file or directory",
		"guide.md:41: other.md#nothing-here: no heading with this anchor in other.md",
		"guide.md:42: #a-comment-not-a-heading: no heading with this anchor in guide.md",
		"guide.md:43: sub/#x: an anchor in a directory",
		"guide.md:45: #also-lost: no heading with this anchor in guide.md",
	}
	if !slices.Equal(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Quick start":                            "quick-start",
		"Agent to agent (A2A)":                   "agent-to-agent-a2a",
		"Agents in your IDE (MCP)":               "agents-in-your-ide-mcp",
		"Run an agent on Telegram / X / Discord": "run-an-agent-on-telegram--x--discord",
		"Administration: accounts and keys":      "administration-accounts-and-keys",
		"The `memory` members":                   "the-memory-members",
		"Use [the API](http://example.com)":      "use-the-api",
		"**Bold** and snake_case":                "bold-and-snake_case",
		"Models & providers":                     "models--providers",
		"Übersicht 2026":                         "übersicht-2026",
	} {
		if got := doclinks.Slug(heading); got != want {
			t.Errorf("Slug(%q) = %q, want %q", heading, got, want)
		}
	}
}

func TestLinksSkipCode(t *testing.T) {
	doc := "a `[x](#span)` b\n\n````md\n```\n[y](#fence)\n```\n````\n[z](#kept)\n" +
		"- an item\n\n    ```yaml\n    [w](#in-a-list-fence)\n    ```\n"
	links := doclinks.Links(doc)
	if len(links) != 1 || links[0].Target != "#kept" || links[0].Line != 8 {
		t.Errorf("Links = %+v, want only #kept on line 8", links)
	}
}
