package turn

import (
	"strings"
	"testing"

	"github.com/agentd/agentd/tools"
)

// TestWithOwnRanksAsTheSet: the memory tools join the set's tools by name
// order; an action keeps a name it shares with one, an MCP server's tool
// gives way to it, as the tool set ranked them when it held them.
func TestWithOwnRanksAsTheSet(t *testing.T) {
	list := []tools.Tool{
		{Name: "a_first", Source: tools.SourceAction},
		{Name: "memory_save", Source: tools.SourceAction},
		{Name: "memory_search", Source: tools.SourceMCP, Server: "srv"},
		{Name: "z_last", Source: tools.SourceMCP, Server: "srv"},
	}
	out, own := withOwn(list, memoryToolList)
	var got []string
	for _, tl := range out {
		got = append(got, tl.Name+"/"+tl.Source)
	}
	if want := "a_first/action,memory_save/action,memory_search/builtin,z_last/mcp"; strings.Join(got, ",") != want {
		t.Errorf("offered %s; want %s", strings.Join(got, ","), want)
	}
	if own["memory_save"] || !own["memory_search"] || len(own) != 1 {
		t.Errorf("the turn runs %v; want memory_search only", own)
	}
	if memoryToolList[1].Source != "" {
		t.Errorf("withOwn marked the shared list: %+v", memoryToolList[1])
	}
}
