package connect

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentd/agentd/domain"
)

// TestAskOf: an approval message names the agent, the tool, who asked
// and the arguments, cut to 1,000 characters, with an Approve button then
// a Deny one whose data name the call and fit Telegram's 64 bytes.
func TestAskOf(t *testing.T) {
	long := `{"note":"` + strings.Repeat("é", 1200) + `"}`
	run := domain.Run{UserID: "telegram:99", Input: domain.RunInput{UserName: "Ann"}}
	a := askOf("Guard", run, domain.WaitingCall{ID: "call_01jd3vb2k8r4m6n8p0q2s4t6vw", Name: "pay", Arguments: json.RawMessage(long)})
	head, args, _ := strings.Cut(a.Text, "\n")
	if head != "Guard asks to run the tool pay for Ann (telegram:99) with:" {
		t.Errorf("first line %q", head)
	}
	if n := utf8.RuneCountInString(args); n != maxArguments || !strings.HasSuffix(args, "…") || !strings.HasPrefix(long, strings.TrimSuffix(args, "…")) {
		t.Errorf("arguments shown: %d characters %q", n, args)
	}
	want := []Button{{Label: "Approve", Data: "approve:call_01jd3vb2k8r4m6n8p0q2s4t6vw", Approve: true},
		{Label: "Deny", Data: "deny:call_01jd3vb2k8r4m6n8p0q2s4t6vw"}}
	if !slices.Equal(a.Buttons, want) || len(a.Buttons[0].Data) > 64 {
		t.Errorf("buttons %+v, want %+v", a.Buttons, want)
	}
	short := askOf("Guard", domain.Run{}, domain.WaitingCall{Name: "pay", Arguments: json.RawMessage(`{}`)})
	if short.Text != "Guard asks to run the tool pay with:\n{}" {
		t.Errorf("a call of a run without a user: %q", short.Text)
	}
}

// TestAdminsOf: adminUsers names users by id (digits only) or by
// username, with or without '@', in any case.
func TestAdminsOf(t *testing.T) {
	admins := adminsOf(json.RawMessage(`{"adminUsers": ["@Boss", " 777 ", "sam"], "allowedUsers": ["eve"]}`))
	for _, c := range []struct {
		user Sender
		want bool
	}{
		{Sender{ID: "1", Username: "boss"}, true},
		{Sender{ID: "777"}, true},
		{Sender{ID: "2", Username: "SAM"}, true},
		{Sender{ID: "3", Username: "eve"}, false},
		{Sender{ID: "4", Username: "777"}, false},
		{Sender{}, false},
	} {
		if got := admins.has(c.user); got != c.want {
			t.Errorf("has(%+v) = %t, want %t", c.user, got, c.want)
		}
	}
	if !adminsOf(nil).empty() || !adminsOf(json.RawMessage(`{"adminUsers": "boss"}`)).empty() {
		t.Error("no adminUsers, or not a list, names somebody")
	}
}

// TestDecidedAlready: a press finds its call no longer waiting when the
// store finds no run waiting for it, the run waits no more, or the call
// was decided; any other failure is not that.
func TestDecidedAlready(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("store: %w", domain.ErrRunNotFound), true},
		{&domain.Error{Code: domain.CodeNotWaiting, Resource: "run", Status: "completed"}, true},
		{&domain.Error{Code: domain.CodeInvalid, Field: "decisions", Reason: "names call_x, which is not a call the run waits for"}, true},
		{&domain.Error{Code: domain.CodeInvalid, Field: "decisions[0].arguments"}, false},
		{domain.ErrNotFound, false},
		{fmt.Errorf("database is locked"), false},
	} {
		if got := decidedAlready(c.err); got != c.want {
			t.Errorf("decidedAlready(%v) = %t, want %t", c.err, got, c.want)
		}
	}
}
